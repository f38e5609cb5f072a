//! A model's parameter struct read from its scenario table with serde:
//! defaults from `#[serde(default)]`, types checked by serde, unknown keys
//! rejected, and every error located at the key's line (or blamed on the
//! `--set` flag that gave it).

use serde::de::DeserializeOwned;
use serde::Serialize;
use toml::Value;

use crate::model::ParamError;
use crate::scenario::{InputError, Scenario};

/// The keys of a serialised value, for "unknown key; [t] takes …".
fn keys_of<T: Serialize>(value: &T) -> Vec<String> {
    match Value::try_from(value) {
        Ok(Value::Table(t)) => t.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// serde's messages, made to read as the rest of the scenario errors.
fn tidy(msg: &str) -> String {
    let msg = msg.trim();
    let msg = msg.strip_prefix("invalid type: ").map_or(msg.to_string(), |m| format!("found {m}"));
    msg.replace("\n", " ")
}

impl Scenario {
    /// Reads `[table]` into `T` (a missing table is an empty one, so every
    /// field needs a default or the error names it).
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// #[derive(Serialize, Deserialize, Debug, PartialEq)]
    /// struct Bank { tellers: u32, #[serde(default)] rate: f64 }
    ///
    /// let mut sc = parsim::Scenario::parse("bank.toml".as_ref(), "[bank]\ntellers = 3\n".into())?;
    /// assert_eq!(sc.params::<Bank>("bank")?, Bank { tellers: 3, rate: 0.0 });
    ///
    /// let mut sc = parsim::Scenario::parse("bank.toml".as_ref(), "[bank]\ntellers = \"x\"\n".into())?;
    /// let e = sc.params::<Bank>("bank").unwrap_err();
    /// assert_eq!(e.place, "bank.toml:2");
    /// assert!(e.msg.contains("tellers"), "{e}");
    /// # Ok::<(), parsim::InputError>(())
    /// ```
    pub fn params<T: DeserializeOwned + Serialize>(&mut self, table: &str) -> Result<T, InputError> {
        let section = self.section(table, false)?;
        let value = Value::Table(section.table().clone());
        drop(section);
        let mut ignored = Vec::new();
        let mut track = serde_path_to_error::Track::new();
        let de = serde_path_to_error::Deserializer::new(value, &mut track);
        let result: Result<T, _> = serde_ignored::deserialize(de, |path| ignored.push(path.to_string()));
        match result {
            Ok(t) => {
                if let Some(key) = ignored.first() {
                    let known = keys_of(&t).join(", ");
                    return Err(self.param_error(table, key, &format!("unknown key; [{table}] takes {known}")));
                }
                Ok(t)
            }
            Err(e) => {
                let path = track.path().to_string();
                let msg = tidy(&e.to_string());
                // "missing field `x`" is reported at the table, naming the field.
                let key =
                    if path == "." || path.is_empty() { msg.split('`').nth(1).unwrap_or("").to_string() } else { path };
                Err(self.param_error(table, &key, &msg))
            }
        }
    }

    /// A [`ParamError`] from a model's check, located in `[table]`.
    pub fn param_check_error(&self, table: &str, e: &ParamError) -> InputError {
        self.param_error(table, &e.key, &e.msg)
    }

    fn param_error(&self, table: &str, key: &str, msg: &str) -> InputError {
        let top = key.split(['.', '[']).next().unwrap_or(key);
        let shown = if key.is_empty() { format!("[{table}]") } else { format!("[{table}] {key}") };
        self.error_at(table, top, format!("{shown}: {msg}"))
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use std::path::Path;

    use crate::Scenario;

    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
    #[serde(default)]
    struct P {
        tellers: u32,
        rate: f64,
        inner: Inner,
    }
    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Default)]
    #[serde(default)]
    struct Inner {
        k: u8,
    }
    impl Default for P {
        fn default() -> Self {
            P { tellers: 2, rate: 0.5, inner: Inner::default() }
        }
    }

    fn sc(text: &str) -> Scenario {
        Scenario::parse(Path::new("m.toml"), text.to_string()).unwrap()
    }

    #[test]
    fn defaults_fill_a_missing_table() {
        assert_eq!(sc("").params::<P>("bank").unwrap(), P::default());
    }

    #[test]
    fn wrong_type_names_key_and_line() {
        let e = sc("[run]\nseed = 1\n[bank]\nrate = 1\ntellers = -3\n").params::<P>("bank").unwrap_err();
        assert_eq!(e.place, "m.toml:5", "{e}");
        assert!(e.msg.starts_with("[bank] tellers:"), "{e}");
    }

    #[test]
    fn nested_keys_are_located_at_their_table_entry() {
        let e = sc("[bank]\ninner = { k = 300 }\n").params::<P>("bank").unwrap_err();
        assert_eq!(e.place, "m.toml:2", "{e}");
        assert!(e.msg.contains("inner.k"), "{e}");
    }

    #[test]
    fn unknown_keys_are_errors_listing_the_known_ones() {
        let e = sc("[bank]\ntellers = 3\ntelers = 4\n").params::<P>("bank").unwrap_err();
        assert_eq!(e.place, "m.toml:3", "{e}");
        assert!(e.msg.contains("telers") && e.msg.contains("inner, rate, tellers"), "{e}");
    }

    #[test]
    fn set_without_a_table_goes_to_the_model_table() {
        let mut s = sc("[bank]\ntellers = 3\n");
        s.set_in("tellers=9", Some("bank")).unwrap();
        assert_eq!(s.params::<P>("bank").unwrap().tellers, 9);
        s.set_in("tellers=x", Some("bank")).unwrap();
        let e = s.params::<P>("bank").unwrap_err();
        assert!(e.place.contains("command line"), "{e}");
    }
}
