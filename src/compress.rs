// SPDX-License-Identifier: GPL-2.0-only
//! Compressed modules (`.ko.xz`, `.ko.zst`, `.ko.gz`), as `make
//! modules_install` leaves them with `CONFIG_MODULE_COMPRESS`_*.
//!
//! Recompression uses the kernel's own settings (scripts/Makefile.modinst):
//! xz with a CRC32 check and a 1 MiB dictionary, because the in-kernel
//! decoder rejects CRC64 and larger dictionaries; zstd at its default
//! level; gzip without a name or timestamp (`gzip -n`).

#![allow(clippy::missing_errors_doc, reason = "every error is an `Error` variant, and error.rs documents each")]

use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Xz,
    Zstd,
    Gzip,
}

/// No module comes near this; a larger output is a decompression bomb.
pub const MAX_PAYLOAD: u64 = 1 << 30;

impl Format {
    #[must_use]
    pub fn detect(data: &[u8]) -> Option<Format> {
        if data.starts_with(b"\xfd7zXZ\0") {
            Some(Format::Xz)
        } else if data.starts_with(b"\x28\xb5\x2f\xfd") {
            Some(Format::Zstd)
        } else if data.starts_with(b"\x1f\x8b") {
            Some(Format::Gzip)
        } else {
            None
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Format::Xz => "xz",
            Format::Zstd => "zstd",
            Format::Gzip => "gzip",
        }
    }
}

#[cfg(feature = "compression")]
mod imp {
    use std::io::{Read, Write};

    use super::{Format, MAX_PAYLOAD};
    use crate::error::Error;

    fn io(what: &'static str) -> impl Fn(std::io::Error) -> Error {
        move |e| Error::IoAt { what, source: e }
    }

    pub fn decompress(format: Format, data: &[u8]) -> Result<Vec<u8>, Error> {
        let reader: Box<dyn Read + '_> = match format {
            Format::Xz => Box::new(liblzma::read::XzDecoder::new(data)),
            Format::Zstd => Box::new(zstd::stream::read::Decoder::new(data).map_err(io("zstd"))?),
            Format::Gzip => Box::new(flate2::read::GzDecoder::new(data)),
        };
        let mut out = Vec::new();
        reader
            .take(MAX_PAYLOAD + 1)
            .read_to_end(&mut out)
            .map_err(|e| Error::Decompress(format!("{} stream: {}", format.name(), crate::error::plain(&e))))?;
        if out.len() as u64 > MAX_PAYLOAD {
            return Err(Error::Decompress(format!("{} payload is larger than 1 GiB", format.name())));
        }
        Ok(out)
    }

    pub fn compress(format: Format, data: &[u8]) -> Result<Vec<u8>, Error> {
        match format {
            Format::Xz => {
                let mut options =
                    liblzma::stream::LzmaOptions::new_preset(6).map_err(|e| Error::Compress(e.to_string()))?;
                options.dict_size(1 << 20);
                let mut filters = liblzma::stream::Filters::new();
                filters.lzma2(&options);
                let stream = liblzma::stream::Stream::new_stream_encoder(&filters, liblzma::stream::Check::Crc32)
                    .map_err(|e| Error::Compress(e.to_string()))?;
                let mut enc = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
                enc.write_all(data).map_err(io("xz"))?;
                enc.finish().map_err(io("xz"))
            }
            Format::Zstd => zstd::stream::encode_all(data, 0).map_err(io("zstd")),
            Format::Gzip => {
                let mut enc = flate2::GzBuilder::new().write(Vec::new(), flate2::Compression::default());
                enc.write_all(data).map_err(io("gzip"))?;
                enc.finish().map_err(io("gzip"))
            }
        }
    }
}

#[cfg(not(feature = "compression"))]
mod imp {
    use super::Format;
    use crate::error::Error;

    fn missing(format: Format) -> Error {
        Error::NoCompression(format.name())
    }
    pub fn decompress(format: Format, _: &[u8]) -> Result<Vec<u8>, Error> {
        Err(missing(format))
    }
    pub fn compress(format: Format, _: &[u8]) -> Result<Vec<u8>, Error> {
        Err(missing(format))
    }
}

pub use imp::{compress, decompress};

/// Compress, and prove the result decompresses to exactly `data`.
pub fn compress_verified(format: Format, data: &[u8]) -> Result<Vec<u8>, Error> {
    let packed = compress(format, data)?;
    if decompress(format, &packed)? != data {
        return Err(Error::Internal(format!("{} round trip of the processed module failed", format.name())));
    }
    Ok(packed)
}

#[cfg(all(test, feature = "compression"))]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_uses_the_kernels_xz_settings() {
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        for f in [Format::Xz, Format::Zstd, Format::Gzip] {
            let packed = compress_verified(f, &data).unwrap();
            assert_eq!(Format::detect(&packed), Some(f));
            assert_eq!(decompress(f, &packed).unwrap(), data);
        }
        // Stream flags: byte 7 of the xz header is the check type, 1 = CRC32.
        let xz = compress(Format::Xz, b"module").unwrap();
        assert_eq!(xz[7], 1, "the kernel's xz decoder needs a CRC32 check");
        // gzip -n: no name flag, zero mtime.
        let gz = compress(Format::Gzip, b"module").unwrap();
        assert_eq!(gz[3] & 0x08, 0);
        assert_eq!(&gz[4..8], &[0, 0, 0, 0]);
    }
}
