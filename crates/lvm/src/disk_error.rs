//! [`DiskError`]: what can be wrong with the binary structures of a PV (the
//! label, the pv_header, the mda_header and the placement of a metadata
//! text), each case with the numbers that show it.
//!
//! Offsets are bytes from the start of the device unless a field says
//! otherwise; "sector" is a 512-byte sector number.

/// Which NULL-terminated `disk_locn` list of the pv_header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LocnList {
    /// The data areas (where the extents are).
    Data,
    /// The metadata areas.
    Metadata,
    /// The extension's bootloader areas.
    Bootloader,
}

impl std::fmt::Display for LocnList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LocnList::Data => "data area",
            LocnList::Metadata => "metadata area",
            LocnList::Bootloader => "bootloader area",
        })
    }
}

/// A malformed label, pv_header, mda_header or text location.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiskError {
    /// A sector starts with `LABELONE` but says it is another sector.
    #[error("label in sector {sector} claims to be in sector {claimed}")]
    LabelSector {
        /// Where the label is.
        sector: u64,
        /// Its `sector_xl`.
        claimed: u64,
    },
    /// The label's CRC (over bytes 20..512 of its sector) does not match.
    #[error("label in sector {sector}: crc {stored:#010x} stored, {computed:#010x} computed")]
    LabelCrc {
        /// Where the label is.
        sector: u64,
        /// `crc_xl`.
        stored: u32,
        /// The CRC of the sector.
        computed: u32,
    },
    /// The label's type is not `LVM2 001`.
    #[error("label in sector {sector} has type \"{}\", not \"LVM2 001\"", found.escape_ascii())]
    LabelType {
        /// Where the label is.
        sector: u64,
        /// `type`, as stored.
        found: [u8; 8],
    },
    /// The pv_header does not fit in the label sector after the label.
    #[error("pv_header offset {offset} does not fit in the label sector")]
    PvHeaderOffset {
        /// `offset_xl`, from the start of the sector.
        offset: u32,
    },
    /// The PV uuid is not 32 characters of `[0-9A-Za-z]`.
    #[error("pv_header uuid \"{}\" is not 32 alphanumeric characters", found.escape_ascii())]
    PvUuid {
        /// The 32 bytes, as stored.
        found: [u8; 32],
    },
    /// A `disk_locn` list has no NULL terminator inside the label sector.
    #[error("{list} list runs past the end of the label sector")]
    LocnOverflow {
        /// Which list.
        list: LocnList,
    },
    /// A metadata area is too small for its header, or ends past the
    /// device (or past 2^64).
    #[error("metadata area at {offset} of {size} bytes does not fit a device of {device_size}")]
    MdaOutsideDevice {
        /// The area's offset.
        offset: u64,
        /// The area's size.
        size: u64,
        /// The device size.
        device_size: u64,
    },
    /// The mda_header's CRC (over bytes 4..512) does not match.
    #[error("mda_header at {offset}: crc {stored:#010x} stored, {computed:#010x} computed")]
    MdaCrc {
        /// Where the header is.
        offset: u64,
        /// `checksum_xl`.
        stored: u32,
        /// The CRC of the header.
        computed: u32,
    },
    /// The mda_header's magic is not LVM's.
    #[error("mda_header at {offset} has a wrong magic")]
    MdaMagic {
        /// Where the header is.
        offset: u64,
        /// The 16 bytes, as stored.
        found: [u8; 16],
    },
    /// The mda_header's version is not 1.
    #[error("mda_header at {offset} has version {version}, not 1")]
    MdaVersion {
        /// Where the header is.
        offset: u64,
        /// `version`.
        version: u32,
    },
    /// The mda_header's `start` is not where it was read from.
    #[error("mda_header at {offset} says it starts at {start}")]
    MdaStart {
        /// Where the header is.
        offset: u64,
        /// `start`.
        start: u64,
    },
    /// The mda_header's `size` is smaller than the header itself.
    #[error("mda_header at {offset} has size {size}, smaller than its header")]
    MdaSize {
        /// Where the header is.
        offset: u64,
        /// `size`.
        size: u64,
    },
    /// The raw_locn list has no NULL terminator inside the mda_header.
    #[error("mda_header at {offset}: raw_locn list runs past the header")]
    RawLocnOverflow {
        /// Where the header is.
        offset: u64,
    },
    /// A raw_locn's text does not lie in its metadata area's circular
    /// buffer (it starts inside the header or past the end, or is larger
    /// than the buffer).
    #[error(
        "text at {text_offset} of {text_size} bytes is outside the metadata area of {area_size} at {mda_offset}"
    )]
    TextOutOfArea {
        /// Where the mda_header is.
        mda_offset: u64,
        /// The raw_locn's `offset`, from the mda_header.
        text_offset: u64,
        /// The raw_locn's `size`.
        text_size: u64,
        /// The mda_header's `size`.
        area_size: u64,
    },
    /// A raw_locn's text is larger than weir reads ([`TEXT_SIZE_MAX`]).
    ///
    /// [`TEXT_SIZE_MAX`]: crate::mda::TEXT_SIZE_MAX
    #[error("text of {size} bytes is larger than the {limit}-byte limit")]
    TextTooLarge {
        /// The raw_locn's `size`.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A piece of a text lies past the end of the device.
    #[error("text piece at {offset} of {size} bytes is past the end of a device of {device_size}")]
    TextOutsideDevice {
        /// The piece's absolute offset.
        offset: u64,
        /// The piece's size.
        size: u64,
        /// The device size.
        device_size: u64,
    },
    /// The text's CRC does not match its raw_locn's checksum.
    #[error("text at {offset}: checksum {stored:#010x} stored, {computed:#010x} computed")]
    TextChecksum {
        /// The text's absolute offset (its first piece).
        offset: u64,
        /// The raw_locn's `checksum`.
        stored: u32,
        /// The CRC of the text read.
        computed: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_show_stored_bytes_as_text() {
        let e = DiskError::LabelType {
            sector: 1,
            found: *b"LVM1 \x00\x01x",
        };
        assert_eq!(
            e.to_string(),
            "label in sector 1 has type \"LVM1 \\x00\\x01x\", not \"LVM2 001\""
        );
        let e = DiskError::LabelCrc {
            sector: 1,
            stored: 0xdead_beef,
            computed: 1,
        };
        assert_eq!(
            e.to_string(),
            "label in sector 1: crc 0xdeadbeef stored, 0x00000001 computed"
        );
    }
}
