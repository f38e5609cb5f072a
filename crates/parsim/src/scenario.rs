//! Scenario files: TOML with a `[run]` table and one table per model, every
//! key validated, every error naming the file, the line and the key.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

/// Bad input: a malformed scenario, an unknown or ill-typed key, an
/// out-of-range value, a bad flag. Exit code 2.
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    /// Where: `file:line`, `file`, or the flag.
    pub place: String,
    /// What was expected.
    pub msg: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.msg)
    }
}

impl std::error::Error for InputError {}

impl InputError {
    /// An error about a command-line flag.
    pub fn flag(flag: &str, msg: impl Into<String>) -> Self {
        InputError { place: flag.to_string(), msg: msg.into() }
    }
}

/// A parsed scenario: the TOML tree plus what is needed to point at lines.
#[derive(Debug, Clone)]
pub struct Scenario {
    path: PathBuf,
    text: String,
    root: Table,
    /// `table.key`s set with `--set` (their errors point at the flag).
    overridden: BTreeSet<String>,
    /// Tables that have been claimed by a [`Section`].
    claimed: BTreeSet<String>,
}

/// What a wrong value was, with the value itself (shortened): `the string
/// "abc"`, `the float 1.5`, `a table`.
fn type_name(v: &Value) -> String {
    let shown = |text: String| {
        let mut t: String = text.chars().take(60).collect();
        if t.len() < text.len() {
            t.push('…');
        }
        t
    };
    match v {
        Value::String(s) => format!("the string {}", shown(format!("{s:?}"))),
        Value::Integer(i) => format!("the integer {i}"),
        Value::Float(f) => format!("the float {f}"),
        Value::Boolean(b) => format!("the boolean {b}"),
        Value::Datetime(d) => format!("the date {d}"),
        Value::Array(_) => format!("the array {}", shown(v.to_string())),
        Value::Table(_) => "a table".into(),
    }
}

fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

impl Scenario {
    /// Reads and parses a scenario file.
    pub fn load(path: &Path) -> Result<Self, InputError> {
        let text = std::fs::read_to_string(path).map_err(|e| InputError {
            place: path.display().to_string(),
            msg: format!("cannot read the scenario: {e}"),
        })?;
        Self::parse(path, text)
    }

    /// Parses scenario text (`path` is used in messages).
    pub fn parse(path: &Path, text: String) -> Result<Self, InputError> {
        let root: Table = text.parse().map_err(|e: toml::de::Error| {
            let place = match e.span() {
                Some(span) => format!("{}:{}", path.display(), line_of_offset(&text, span.start)),
                None => path.display().to_string(),
            };
            InputError { place, msg: format!("invalid TOML: {}", e.message()) }
        })?;
        Ok(Scenario { path: path.to_path_buf(), text, root, overridden: BTreeSet::new(), claimed: BTreeSet::new() })
    }

    /// The file the scenario came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Applies `--set table.key=value`; the value is read as TOML (`50`,
    /// `true`, `"x"`, `[1, 2]`), or as a plain string if it is not TOML.
    pub fn set(&mut self, assignment: &str) -> Result<(), InputError> {
        self.set_in(assignment, None)
    }

    /// [`set`](Self::set), where a key without a table (`tellers=5`) goes to
    /// `default_table` (a model's own table).
    pub fn set_in(&mut self, assignment: &str, default_table: Option<&str>) -> Result<(), InputError> {
        let flag = format!("--set {assignment}");
        let (key, raw) =
            assignment.split_once('=').ok_or_else(|| InputError::flag(&flag, "expected table.key=value"))?;
        let key = key.trim();
        let (table, field) = match (key.split_once('.'), default_table) {
            (Some((t, f)), _) => (t, f),
            (None, Some(t)) => (t, key),
            (None, None) => ("", key),
        };
        if table.is_empty() || field.is_empty() || field.contains('.') {
            let eg = default_table.map_or("ring.laps".to_string(), |t| format!("{t}.key or key"));
            return Err(InputError::flag(&flag, format!("expected a key of the form table.key (e.g. {eg})")));
        }
        let raw = raw.trim();
        let value = format!("v = {raw}")
            .parse::<Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| Value::String(raw.to_string()));
        let t = self.root.entry(table.to_string()).or_insert_with(|| Value::Table(Table::new()));
        let Value::Table(t) = t else {
            return Err(InputError::flag(&flag, format!("`{table}` is not a table in the scenario")));
        };
        t.insert(field.to_string(), value);
        self.overridden.insert(format!("{table}.{field}"));
        Ok(())
    }

    /// The scenario as it stands after every `--set` and flag: what
    /// `summary.json` records so that the run can be repeated.
    pub fn resolved(&self) -> &Table {
        &self.root
    }

    /// The keys set on the command line (`table.key`), in order.
    pub fn overrides(&self) -> Vec<String> {
        self.overridden.iter().cloned().collect()
    }

    /// The scenario's text as read (before overrides).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Sets a value from a dedicated flag (`--seed`, `--ranks` …).
    pub fn set_value(&mut self, table: &str, key: &str, value: Value) {
        let t = self.root.entry(table.to_string()).or_insert_with(|| Value::Table(Table::new()));
        if let Value::Table(t) = t {
            t.insert(key.to_string(), value);
        }
        self.overridden.insert(format!("{table}.{key}"));
    }

    /// The line of `key` in `[table]` (or of the table header when `key` is empty).
    fn line_of(&self, table: &str, key: &str) -> Option<usize> {
        let mut current = String::new();
        let mut header_line = None;
        for (i, line) in self.text.lines().enumerate() {
            let l = line.trim();
            if let Some(h) = l.strip_prefix('[') {
                let name = h.trim_start_matches('[').split(']').next().unwrap_or("").trim();
                current = name.trim_matches('"').to_string();
                if current == table {
                    header_line = Some(i + 1);
                }
                continue;
            }
            if current != table || key.is_empty() {
                continue;
            }
            let k = l.split('=').next().unwrap_or("").trim().trim_matches('"');
            if l.contains('=') && k == key {
                return Some(i + 1);
            }
        }
        header_line
    }

    /// An error located at `table.key`.
    pub fn error_at(&self, table: &str, key: &str, msg: impl Into<String>) -> InputError {
        let msg = msg.into();
        if self.overridden.contains(&format!("{table}.{key}")) {
            return InputError { place: format!("{} (set on the command line)", self.path.display()), msg };
        }
        let place = match self.line_of(table, key) {
            Some(l) => format!("{}:{l}", self.path.display()),
            None => self.path.display().to_string(),
        };
        InputError { place, msg }
    }

    /// Whether the scenario has a table `[name]` that no section has claimed.
    pub fn has_table(&self, name: &str) -> bool {
        self.root.contains_key(name) && !self.claimed.contains(name)
    }

    /// The table `[name]` for validation; `required` makes a missing table an error.
    pub fn section(&mut self, name: &str, required: bool) -> Result<Section<'_>, InputError> {
        self.claimed.insert(name.to_string());
        let table = match self.root.get(name) {
            Some(Value::Table(t)) => t.clone(),
            Some(other) => {
                return Err(self.error_at(name, "", format!("`{name}` must be a table, found {}", type_name(other))))
            }
            None if required => {
                return Err(InputError {
                    place: self.path.display().to_string(),
                    msg: format!("missing table [{name}]"),
                })
            }
            None => Table::new(),
        };
        Ok(Section { sc: self, name: name.to_string(), table, used: BTreeSet::new() })
    }

    /// Fails on any table no section claimed.
    pub fn finish(&self) -> Result<(), InputError> {
        for (name, _) in self.root.iter() {
            if !self.claimed.contains(name) {
                let expected: Vec<String> = self.claimed.iter().map(|c| format!("[{c}]")).collect();
                return Err(self.error_at(
                    name,
                    "",
                    format!("unknown table or key `{name}`; this scenario takes {}", expected.join(", ")),
                ));
            }
        }
        Ok(())
    }
}

/// One table of a scenario being validated, key by key.
pub struct Section<'a> {
    sc: &'a Scenario,
    name: String,
    table: Table,
    used: BTreeSet<String>,
}

impl Section<'_> {
    fn err(&self, key: &str, msg: String) -> InputError {
        // `close.to` (a key inside an inline table) is located at `close`.
        let top = key.split('.').next().unwrap_or(key);
        self.sc.error_at(&self.name, top, format!("[{}] {key}: {msg}", self.name))
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        self.used.insert(key.to_string());
        self.table.get(key).cloned()
    }

    /// An integer in `range`, or `default` when absent (`None`: required).
    pub fn int(&mut self, key: &str, default: Option<u64>, range: RangeInclusive<u64>) -> Result<u64, InputError> {
        let (lo, hi) = (*range.start(), *range.end());
        let bounds = if hi == u64::MAX { format!("≥ {lo}") } else { format!("in {lo}..={hi}") };
        match self.take(key) {
            None => default.ok_or_else(|| self.err(key, format!("missing; expected an integer {bounds}"))),
            Some(Value::Integer(i)) if i >= 0 && range.contains(&(i as u64)) => Ok(i as u64),
            Some(Value::Integer(i)) => Err(self.err(key, format!("expected an integer {bounds}, found {i}"))),
            Some(v) => Err(self.err(key, format!("expected an integer {bounds}, found {}", type_name(&v)))),
        }
    }

    /// A string from `choices`, or `default` when absent.
    pub fn choice(&mut self, key: &str, default: Option<&str>, choices: &[&str]) -> Result<String, InputError> {
        let list = choices.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", ");
        match self.take(key) {
            None => {
                default.map(str::to_string).ok_or_else(|| self.err(key, format!("missing; expected one of {list}")))
            }
            Some(Value::String(s)) if choices.contains(&s.as_str()) => Ok(s),
            Some(Value::String(s)) => Err(self.err(key, format!("expected one of {list}, found \"{s}\""))),
            Some(v) => Err(self.err(key, format!("expected one of {list}, found {}", type_name(&v)))),
        }
    }

    /// A string, or `default` when absent.
    pub fn string(&mut self, key: &str, default: Option<&str>) -> Result<Option<String>, InputError> {
        match self.take(key) {
            None => Ok(default.map(str::to_string)),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(key, format!("expected a string, found {}", type_name(&v)))),
        }
    }

    /// A boolean, or `default` when absent.
    pub fn boolean(&mut self, key: &str, default: bool) -> Result<bool, InputError> {
        match self.take(key) {
            None => Ok(default),
            Some(Value::Boolean(b)) => Ok(b),
            Some(v) => Err(self.err(key, format!("expected true or false, found {}", type_name(&v)))),
        }
    }

    /// A number (integer or float) in `range`, or `default` when absent.
    pub fn float(&mut self, key: &str, default: f64, range: RangeInclusive<f64>) -> Result<f64, InputError> {
        let num = |x: f64| if x != 0.0 && !(1e-4..1e9).contains(&x.abs()) { format!("{x:e}") } else { format!("{x}") };
        let bounds = format!("a number in {}..={}", num(*range.start()), num(*range.end()));
        let x = match self.take(key) {
            None => return Ok(default),
            Some(Value::Float(f)) => f,
            Some(Value::Integer(i)) => i as f64,
            Some(v) => return Err(self.err(key, format!("expected {bounds}, found {}", type_name(&v)))),
        };
        if range.contains(&x) {
            Ok(x)
        } else {
            Err(self.err(key, format!("expected {bounds}, found {}", num(x))))
        }
    }

    /// A list of `len` integers, each in `range` (`None`: required).
    pub fn int_list(
        &mut self,
        key: &str,
        default: Option<Vec<u64>>,
        len: RangeInclusive<usize>,
        range: RangeInclusive<u64>,
    ) -> Result<Vec<u64>, InputError> {
        let what =
            format!("a list of {}..={} integers, each in {}..={}", len.start(), len.end(), range.start(), range.end());
        let arr = match self.take(key) {
            None => return default.ok_or_else(|| self.err(key, format!("missing; expected {what}"))),
            Some(Value::Array(a)) => a,
            Some(v) => return Err(self.err(key, format!("expected {what}, found {}", type_name(&v)))),
        };
        if !len.contains(&arr.len()) {
            return Err(self.err(key, format!("expected {what}, found {} entries", arr.len())));
        }
        arr.iter()
            .map(|v| match v {
                Value::Integer(i) if *i >= 0 && range.contains(&(*i as u64)) => Ok(*i as u64),
                Value::Integer(i) => Err(self.err(key, format!("expected {what}, found {i}"))),
                other => Err(self.err(key, format!("expected {what}, found {}", type_name(other)))),
            })
            .collect()
    }

    /// The raw value of `key`, for keys with a shape of their own (validated
    /// by the caller, with errors made by [`error`](Self::error)).
    pub fn raw(&mut self, key: &str) -> Option<Value> {
        self.take(key)
    }

    /// The table as written (for readers that take it whole, like serde).
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// An error about `key` of this table.
    pub fn error(&self, key: &str, msg: impl Into<String>) -> InputError {
        self.err(key, msg.into())
    }

    /// Fails on any key of the table that was not asked for.
    pub fn finish(self) -> Result<(), InputError> {
        let known: Vec<&str> = self.used.iter().map(String::as_str).collect();
        for key in self.table.keys() {
            if !self.used.contains(key) {
                return Err(self.err(key, format!("unknown key; [{}] takes {}", self.name, known.join(", "))));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(text: &str) -> Scenario {
        Scenario::parse(Path::new("s.toml"), text.to_string()).expect("parses")
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = Scenario::parse(Path::new("s.toml"), "[run]\nseed = 1\nranks = = 2\n".into()).unwrap_err();
        assert_eq!(e.place, "s.toml:3", "{e}");
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let mut s = sc("[run]\nseed = 1\n\n[ring]\nlaps = 3\nlapz = 4\n");
        let mut r = s.section("ring", true).unwrap();
        r.int("laps", None, 1..=10).unwrap();
        let e = r.finish().unwrap_err();
        assert_eq!(e.place, "s.toml:6");
        assert!(e.msg.contains("lapz") && e.msg.contains("unknown key"), "{e}");
    }

    #[test]
    fn wrong_type_and_range() {
        let mut s = sc("[ring]\nlaps = \"many\"\nnodes = 0\n");
        let mut r = s.section("ring", true).unwrap();
        let e = r.int("laps", None, 1..=10).unwrap_err();
        assert_eq!(e.place, "s.toml:2");
        assert!(e.msg.contains("found the string \"many\""), "{e}");
        let e = r.int("nodes", None, 1..=10).unwrap_err();
        assert_eq!(e.place, "s.toml:3");
        assert!(e.msg.contains("found 0"), "{e}");
    }

    #[test]
    fn set_overrides_and_is_blamed_on_the_flag() {
        let mut s = sc("[ring]\nlaps = 3\n");
        s.set("ring.laps=7").unwrap();
        assert_eq!(s.section("ring", true).unwrap().int("laps", None, 1..=10).unwrap(), 7);
        s.set("ring.laps=0").unwrap();
        let e = s.section("ring", true).unwrap().int("laps", None, 1..=10).unwrap_err();
        assert!(e.place.contains("command line"), "{e}");
        assert!(s.set("nonsense").is_err());
        assert!(s.set("a.b.c=1").is_err());
    }

    #[test]
    fn unknown_table_is_an_error() {
        let mut s = sc("[run]\nseed = 1\n[rign]\nlaps = 1\n");
        s.section("run", true).unwrap().int("seed", None, 0..=u64::MAX).unwrap();
        let e = s.finish().unwrap_err();
        assert_eq!(e.place, "s.toml:3");
        assert!(e.msg.contains("rign"), "{e}");
    }
}
