//! RFC 3161 timestamps of checkpoints: the request sent to a timestamp authority (TSA)
//! and the checks made of its answer before it is kept beside the checkpoint.
//!
//! The timestamped message is the whole signed checkpoint note, hashed with SHA-256, so
//! `openssl ts -verify -data <note file> -in <response> -CAfile <TSA chain>` checks it.
//! The TSA's signature itself is left to that check, against a chain the auditor trusts;
//! here the answer must be granted and carry a token for exactly this hash (and nonce).

use chrono::{DateTime, Utc};
use cmpv2::status::PkiStatus;
use cms::cert::x509::spki::AlgorithmIdentifier;
use cms::content_info::ContentInfo;
use cms::signed_data::EncapsulatedContentInfo;
use der::asn1::{AnyRef, Int, OctetString};
use der::oid::ObjectIdentifier;
use der::{Any, Decode, Encode, Reader, SliceReader};
use sha2::{Digest, Sha256};
use x509_tsp::{MessageImprint, TimeStampReq, TimeStampResp, TspVersion, TstInfo};

/// id-sha256.
const SHA_256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
/// id-signedData.
const SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
/// id-ct-TSTInfo.
const TST_INFO: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");

/// Why a timestamp response is not kept (or not accepted by a verifier).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    #[error("the timestamp response is not DER a verifier can read ({0})")]
    Malformed(String),
    #[error("the timestamp authority did not grant the request (status {0})")]
    NotGranted(String),
    #[error("the timestamp response carries no token")]
    NoToken,
    #[error("the timestamp is for another hash than this checkpoint's")]
    OtherHash,
    #[error("the timestamp answers another request (nonce differs)")]
    OtherNonce,
}

fn malformed(e: impl std::fmt::Display) -> TimestampError {
    TimestampError::Malformed(e.to_string())
}

/// SHA-256 of the signed note: the timestamped message.
pub fn imprint(note: &str) -> [u8; 32] {
    Sha256::digest(note.as_bytes()).into()
}

/// A positive INTEGER of `n` in the minimal two's-complement form DER requires.
fn positive(n: u64) -> Result<Int, TimestampError> {
    let bytes = n.to_be_bytes();
    let start = bytes
        .iter()
        .position(|b| *b != 0)
        .unwrap_or(bytes.len() - 1);
    let mut minimal = Vec::with_capacity(9);
    if bytes.get(start).is_some_and(|b| b & 0x80 != 0) {
        minimal.push(0);
    }
    minimal.extend_from_slice(bytes.get(start..).unwrap_or_default());
    Int::new(&minimal).map_err(malformed)
}

/// The DER `TimeStampReq` for `note` (SHA-256, with `nonce`, asking for the TSA's certificate).
pub fn request(note: &str, nonce: u64) -> Result<Vec<u8>, TimestampError> {
    TimeStampReq {
        version: TspVersion::V1,
        message_imprint: MessageImprint {
            hash_algorithm: AlgorithmIdentifier {
                oid: SHA_256,
                parameters: Some(Any::from(AnyRef::NULL)),
            },
            hashed_message: OctetString::new(imprint(note).to_vec()).map_err(malformed)?,
        },
        req_policy: None,
        nonce: Some(positive(nonce)?),
        cert_req: true,
        extensions: None,
    }
    .to_der()
    .map_err(malformed)
}

/// The `encapContentInfo` of a CMS `SignedData`, read without judging the rest: the
/// certificates, CRLs and signer infos are the TSA's to sign and the verifier's to check,
/// and common TSAs (OpenSSL among them) send sets a strict DER reader refuses (the signer's
/// certificate twice).
fn encapsulated_content(signed_data: &[u8]) -> Result<EncapsulatedContentInfo, TimestampError> {
    let mut reader = SliceReader::new(signed_data).map_err(malformed)?;
    reader
        .sequence(|r| {
            let _version: Int = r.decode()?;
            let _digest_algorithms: Any = r.decode()?;
            let encapsulated: EncapsulatedContentInfo = r.decode()?;
            while !r.is_finished() {
                let _rest: Any = r.decode()?;
            }
            Ok(encapsulated)
        })
        .map_err(malformed)
}

/// Checks a DER `TimeStampResp` for `note`; `nonce` when the request's is known. Returns
/// the time the TSA vouches for.
pub fn check(
    response: &[u8],
    note: &str,
    nonce: Option<u64>,
) -> Result<DateTime<Utc>, TimestampError> {
    let resp = TimeStampResp::from_der(response).map_err(malformed)?;
    match resp.status.status {
        PkiStatus::Accepted | PkiStatus::GrantedWithMods => {}
        other => return Err(TimestampError::NotGranted(format!("{other:?}"))),
    }
    let token: ContentInfo = resp.time_stamp_token.ok_or(TimestampError::NoToken)?;
    if token.content_type != SIGNED_DATA {
        return Err(malformed("the token is not CMS SignedData"));
    }
    let encapsulated = encapsulated_content(&token.content.to_der().map_err(malformed)?)?;
    if encapsulated.econtent_type != TST_INFO {
        return Err(malformed("the token does not hold a TSTInfo"));
    }
    let content = encapsulated
        .econtent
        .ok_or_else(|| malformed("the token's content is detached"))?;
    let octets: OctetString = content.decode_as().map_err(malformed)?;
    let info = TstInfo::from_der(octets.as_bytes()).map_err(malformed)?;
    if info.message_imprint.hash_algorithm.oid != SHA_256
        || info.message_imprint.hashed_message.as_bytes() != imprint(note).as_slice()
    {
        return Err(TimestampError::OtherHash);
    }
    if let Some(nonce) = nonce {
        if info.nonce != Some(positive(nonce)?) {
            return Err(TimestampError::OtherNonce);
        }
    }
    let at = info.gen_time.to_system_time();
    Ok(DateTime::<Utc>::from(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_der_with_a_minimal_nonce() {
        for nonce in [0, 1, 0x7f, 0x80, 0xff, 0x1234, u64::MAX] {
            let der = request("note\n", nonce).unwrap();
            let back = TimeStampReq::from_der(&der).unwrap();
            assert_eq!(back.nonce, Some(positive(nonce).unwrap()));
            assert_eq!(
                back.message_imprint.hashed_message.as_bytes(),
                imprint("note\n")
            );
            assert!(back.cert_req);
        }
    }

    #[test]
    fn garbage_is_malformed() {
        assert!(matches!(
            check(b"\x30\x03\x02\x01", "n", None),
            Err(TimestampError::Malformed(_))
        ));
    }
}
