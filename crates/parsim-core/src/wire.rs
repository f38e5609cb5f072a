//! Wire encoding of irregular message payloads: serde values as compact
//! `postcard` bytes (the same encoding on every backend).
//!
//! ```
//! let bytes = parsim_core::wire::encode(&("token", 7u64))?;
//! let back: (String, u64) = parsim_core::wire::decode(&bytes)?;
//! assert_eq!(back, ("token".to_string(), 7));
//! # Ok::<(), parsim_core::CoreError>(())
//! ```

use serde::{de::DeserializeOwned, Serialize};

use crate::CoreError;

/// Encodes a value.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CoreError> {
    postcard::to_stdvec(value).map_err(|e| CoreError::Encode { msg: e.to_string() })
}

/// Decodes a value encoded by [`encode`].
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CoreError> {
    postcard::from_bytes(bytes).map_err(|e| CoreError::Decode {
        msg: e.to_string(),
        len: bytes.len(),
        ty: std::any::type_name::<T>(),
    })
}
