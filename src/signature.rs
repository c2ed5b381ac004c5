// SPDX-License-Identifier: GPL-2.0-only
//! Appended module signatures (`scripts/sign-file.c`, 7.2):
//! `[ELF image][PKCS#7][struct module_signature: 12 bytes][marker: 28 bytes]`.
//!
//! Any edit to the ELF image invalidates the signature, and the kernel then
//! refuses the module ("Key was rejected by service"). So a signed module is
//! only ever written when the user asked for the signature to be dropped.

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]

use crate::error::Error;

pub const MARKER: &[u8] = b"~Module signature appended~\n";
const INFO_LEN: usize = 12;
/// `enum module_signature_type`: the only type the kernel accepts.
const PKEY_ID_PKCS7: u8 = 2;

/// The length of the ELF image if `data` carries a signature, else `None`.
pub fn elf_len(data: &[u8]) -> Result<Option<usize>, Error> {
    let Some(rest) = data.strip_suffix(MARKER) else {
        return Ok(None);
    };
    if rest.len() < INFO_LEN {
        return Err(Error::BadSignature("the marker is there but the signature header is not".into()));
    }
    let info = &rest[rest.len() - INFO_LEN..];
    let sig_len = u32::from_be_bytes([info[8], info[9], info[10], info[11]]) as usize;
    if info[2] != PKEY_ID_PKCS7 {
        return Err(Error::BadSignature(format!("signature type {} is not PKCS#7", info[2])));
    }
    let Some(elf) = (rest.len() - INFO_LEN).checked_sub(sig_len) else {
        return Err(Error::BadSignature(format!("signature length {sig_len} exceeds the file")));
    };
    Ok(Some(elf))
}

/// The length of the ELF image under every appended signature, if any: a
/// module signed twice carries two, and keeping the inner one would make
/// it the next run's signature.
pub fn image_len(data: &[u8]) -> Result<Option<usize>, Error> {
    let Some(mut len) = elf_len(data)? else { return Ok(None) };
    while let Some(inner) = elf_len(&data[..len])? {
        len = inner;
    }
    Ok(Some(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(elf: &[u8], sig: &[u8]) -> Vec<u8> {
        let mut v = elf.to_vec();
        v.extend_from_slice(sig);
        v.extend_from_slice(&[0, 0, PKEY_ID_PKCS7, 0, 0, 0, 0, 0]);
        v.extend_from_slice(&u32::try_from(sig.len()).unwrap().to_be_bytes());
        v.extend_from_slice(MARKER);
        v
    }

    #[test]
    fn measures_the_image_before_the_signature() {
        let data = signed(b"\x7fELF-image", &[0x30, 0x82, 1, 2, 3]);
        assert_eq!(elf_len(&data).unwrap(), Some(10));
        assert_eq!(elf_len(b"\x7fELF-image").unwrap(), None);
    }

    #[test]
    fn rejects_a_signature_longer_than_the_file() {
        let mut data = signed(b"ab", &[1, 2, 3]);
        let n = data.len() - MARKER.len() - 4;
        data[n..n + 4].copy_from_slice(&1000u32.to_be_bytes());
        assert!(matches!(elf_len(&data), Err(Error::BadSignature(_))));
    }
}
