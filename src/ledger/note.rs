//! Signed checkpoints: a c2sp.org/tlog-checkpoint body in a c2sp.org/signed-note,
//! signed with the gateway's Ed25519 key.
//!
//! The key is kept in the signed-note signer-key text form
//! (`PRIVATE+KEY+<name>+<key id>+<key>`, as Go's `note.GenerateKey` writes it); the
//! public side is the verifier key (`<name>+<key id>+<key>`), which is all an auditor
//! needs. The key's name is the log's origin line.

use signed_note::{Note, NoteError, Signer, StandardSigner, StandardVerifier, VerifierList};
use tlog_tiles::checkpoint::Checkpoint;

use crate::ledger::tree::Hash;

/// The gateway's checkpoint signing key.
pub struct CheckpointKey {
    signer: StandardSigner,
    verifier_key: String,
}

/// Why a key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("the signer key is malformed ({0}); it must be PRIVATE+KEY+<name>+<id>+<key>, as `interlock audit keygen` writes it")]
    Signer(String),
    #[error("the verifier key is malformed ({0}); it must be <name>+<id>+<key>")]
    Verifier(String),
}

/// A checkpoint whose signature was checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedCheckpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    /// The whole signed note, as stored and published.
    pub note: String,
}

/// Why a checkpoint note was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the checkpoint is not a well-formed signed note")]
    MalformedNote,
    #[error("the checkpoint carries no signature by the key {0} (signed by another key?)")]
    NotSignedByKey(String),
    #[error("the checkpoint's signature by {0} does not verify: the note was altered or forged")]
    BadSignature(String),
    #[error("the signed text is not a tlog checkpoint (origin, size, root hash)")]
    MalformedCheckpoint,
    #[error("the checkpoint's origin {found:?} is not the key's name {expected:?}")]
    WrongOrigin { expected: String, found: String },
}

impl CheckpointKey {
    /// A key from its signer-key text (surrounding whitespace ignored).
    pub fn parse(skey: &str) -> Result<Self, KeyError> {
        let signer =
            StandardSigner::new(skey.trim()).map_err(|e| KeyError::Signer(e.to_string()))?;
        let verifier_key = verifier_key_of(skey.trim())?;
        Ok(CheckpointKey {
            signer,
            verifier_key,
        })
    }

    /// A new random key named `name` (a log origin such as `interlock.example/audit`);
    /// returns the signer-key text to keep secret.
    pub fn generate(name: &str) -> Result<String, KeyError> {
        if !signed_note::is_key_name_valid(name) {
            return Err(KeyError::Signer(format!(
                "{name:?} is not a key name: it must be non-empty, without spaces or '+'"
            )));
        }
        let (skey, _) = signed_note::generate_key(&mut rand::rngs::OsRng, name);
        Ok(skey)
    }

    /// The key's name: the origin line of its checkpoints.
    pub fn name(&self) -> &str {
        self.signer.name()
    }

    /// The verifier key an auditor checks checkpoints with.
    pub fn verifier_key(&self) -> &str {
        &self.verifier_key
    }

    /// The signed checkpoint of a tree of `size` leaves with root `root`.
    pub fn sign(&self, size: u64, root: Hash) -> Result<SignedCheckpoint, KeyError> {
        let body = Checkpoint::new(self.name(), size, root, "")
            .map_err(|e| KeyError::Signer(e.to_string()))?
            .to_bytes();
        let mut note = Note::new(&body, &[]).map_err(|e| KeyError::Signer(e.to_string()))?;
        note.add_sigs(&[&self.signer])
            .map_err(|e| KeyError::Signer(e.to_string()))?;
        Ok(SignedCheckpoint {
            origin: self.name().to_string(),
            size,
            root,
            note: String::from_utf8_lossy(&note.to_bytes()).into_owned(),
        })
    }
}

/// The verifier key of a signer key: the same name and id, the public half of the key.
fn verifier_key_of(skey: &str) -> Result<String, KeyError> {
    use base64::Engine as _;
    let bad = |why: &str| KeyError::Signer(why.to_string());
    let parts: Vec<&str> = skey.splitn(5, '+').collect();
    let [_, _, name, _, key64] = parts.as_slice() else {
        return Err(bad("expected five '+'-separated fields"));
    };
    let key = base64::engine::general_purpose::STANDARD
        .decode(key64)
        .map_err(|e| bad(&e.to_string()))?;
    let (alg, seed) = key.split_first().ok_or_else(|| bad("empty key"))?;
    let seed: [u8; 32] = seed
        .try_into()
        .map_err(|_| bad("an Ed25519 key is 32 bytes"))?;
    if *alg != 1 {
        return Err(bad("only Ed25519 keys (algorithm 1) are supported"));
    }
    let pair = ring::signature::Ed25519KeyPair::from_seed_unchecked(&seed)
        .map_err(|e| bad(&e.to_string()))?;
    let public = ring::signature::KeyPair::public_key(&pair).as_ref();
    let encoded = [&[1u8][..], public].concat();
    Ok(format!(
        "{name}+{:08x}+{}",
        signed_note::key_id(name, &encoded),
        base64::engine::general_purpose::STANDARD.encode(encoded)
    ))
}

/// Checks a checkpoint note against `verifier_key` alone and reads its tree head.
pub fn verify(note: &str, verifier_key: &str) -> Result<SignedCheckpoint, CheckpointError> {
    let verifier = StandardVerifier::new(verifier_key.trim())
        .map_err(|_| CheckpointError::NotSignedByKey(verifier_key.to_string()))?;
    let name = signed_note::Verifier::name(&verifier).to_string();
    let parsed = Note::from_bytes(note.as_bytes()).map_err(|_| CheckpointError::MalformedNote)?;
    let list = VerifierList::new(vec![Box::new(verifier)]);
    match parsed.verify(&list) {
        Ok(_) => {}
        Err(NoteError::InvalidSignature { .. }) => return Err(CheckpointError::BadSignature(name)),
        Err(_) => return Err(CheckpointError::NotSignedByKey(name)),
    }
    let checkpoint =
        Checkpoint::from_bytes(parsed.text()).map_err(|_| CheckpointError::MalformedCheckpoint)?;
    if checkpoint.origin() != name {
        return Err(CheckpointError::WrongOrigin {
            expected: name,
            found: checkpoint.origin().to_string(),
        });
    }
    Ok(SignedCheckpoint {
        origin: checkpoint.origin().to_string(),
        size: checkpoint.size(),
        root: *checkpoint.hash(),
        note: note.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_verifies_with_its_key_and_with_no_other() {
        let key = CheckpointKey::parse(&CheckpointKey::generate("interlock.test/audit").unwrap())
            .unwrap();
        let other = CheckpointKey::parse(&CheckpointKey::generate("interlock.test/audit").unwrap())
            .unwrap();
        let signed = key.sign(42, Hash([7; 32])).unwrap();
        assert!(signed.note.starts_with("interlock.test/audit\n42\n"));
        let read = verify(&signed.note, key.verifier_key()).unwrap();
        assert_eq!((read.size, read.root), (42, Hash([7; 32])));
        assert_eq!(
            verify(&signed.note, other.verifier_key()),
            Err(CheckpointError::NotSignedByKey(
                "interlock.test/audit".into()
            ))
        );
        let altered = signed.note.replacen("\n42\n", "\n43\n", 1);
        assert_eq!(
            verify(&altered, key.verifier_key()),
            Err(CheckpointError::BadSignature("interlock.test/audit".into()))
        );
        assert_eq!(
            verify("not a note", key.verifier_key()),
            Err(CheckpointError::MalformedNote)
        );
    }

    #[test]
    fn malformed_keys_are_named() {
        for bad in ["", "PRIVATE+KEY+x", "PRIVATE+KEY+x+00000000+AAAA"] {
            assert!(CheckpointKey::parse(bad).is_err(), "{bad}");
        }
        assert!(CheckpointKey::generate("has space").is_err());
    }
}
