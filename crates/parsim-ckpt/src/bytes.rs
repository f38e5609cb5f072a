//! Raw bytes in a checkpoint piece, serialised as one block (a `Vec<u8>`
//! through serde is a sequence of single bytes: far slower to snapshot).

use serde::de::{Error, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes that serialise with `serialize_bytes` (one copy).
///
/// ```
/// let b = parsim_ckpt::Bytes(vec![1, 2, 3]);
/// let enc = postcard::to_allocvec(&b).unwrap();
/// assert_eq!(postcard::from_bytes::<parsim_ckpt::Bytes>(&enc).unwrap(), b);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Bytes;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a byte block")
    }
    fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Bytes, E> {
        Ok(Bytes(v.to_vec()))
    }
    fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
        Ok(Bytes(v))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        d.deserialize_byte_buf(BytesVisitor)
    }
}
