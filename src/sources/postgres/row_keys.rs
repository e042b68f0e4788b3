//! The digest of a set of row keys, as an approval's preview records it and its execution
//! checks it (see `approvals::images`): the SHA-256 of the keys sorted bytewise and joined
//! by commas (the JSON text of the array of keys, so distinct sets never collide).

/// The digest of `keys` (sorted in place).
pub fn keys_digest(keys: &mut [String]) -> [u8; 32] {
    use sha2::Digest;
    keys.sort_unstable();
    let mut hash = sha2::Sha256::new();
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            hash.update(b",");
        }
        hash.update(k.as_bytes());
    }
    hash.finalize().into()
}
