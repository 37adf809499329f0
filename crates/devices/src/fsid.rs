//! [`FsId`]: which filesystem (or swap, or LVM PV) a device holds, with its
//! UUID and label, read from its superblock the way libblkid reads it.
//!
//! There is no udevd on the hosts weir is built for, and weir does not
//! link libblkid, so nothing else would tell `weir devices` what lsblk's
//! `FSTYPE`, `UUID` and `LABEL` columns show. This is a small, exact
//! prober for the filesystems weir supports, with blkid's rules for each:
//! the same magic at the same offset, the same checks that tell ext2, ext3
//! and ext4 apart, the same superblock checksums where blkid verifies one,
//! and the same text for the UUID (`blkid -p -o export` is the reference
//! the tests compare with, byte for byte).
//!
//! It is a pure parser over [`ReadAt`]: the caller passes the device (an
//! `O_DIRECT` reader, or a byte slice in tests and fuzzing). Every field is
//! read from hostile bytes: lengths are fixed by the format, labels are
//! bounded, stop at the first NUL, and stay bytes (not necessarily UTF-8)
//! for the views to escape.
//!
//! A device is read where the formats put their superblocks: the first
//! 8 KiB ([`HEAD_SIZE`]: ext, xfs, vfat and swap with 4 or 8 KiB pages;
//! the LVM probe's read is served from the same bytes), and, only when
//! those hold nothing known, the blocks of btrfs's superblock (64 KiB) and
//! of the swap signatures of larger pages. A vfat volume's label is the
//! entry in its root directory, read as blkid reads it (at most 1 MiB of
//! it searched).

use std::fmt::Write as _;
use std::io;

use weir_lvm::ReadAt;

use crate::{Error, Result};

/// The bytes at the start of a device that one read takes for every
/// prober but btrfs's and large-page swap's.
pub const HEAD_SIZE: usize = 8192;

/// The most label bytes kept: the largest label field of the formats here
/// (btrfs's). blkid keeps a btrfs label of 255 bytes whole, so this is a
/// bound on hostile input, never a cut a real label meets.
pub const MAX_LABEL: usize = 256;

/// What a device holds, as blkid names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FsId {
    /// blkid's `TYPE`: `ext4`, `xfs`, `btrfs`, `swap`, `vfat`,
    /// `LVM2_member`, ...
    pub fstype: &'static str,
    /// blkid's `UUID`, as blkid prints it (lowercase 8-4-4-4-12 for most;
    /// `XXXX-XXXX` for vfat; LVM's dashed form for a PV). `None` when the
    /// format has none or it is all zeros.
    pub uuid: Option<String>,
    /// blkid's `LABEL`: at most [`MAX_LABEL`] bytes, up to the first NUL,
    /// trailing whitespace removed; `None` when that leaves nothing. Not
    /// necessarily UTF-8.
    pub label: Option<Vec<u8>>,
}

/// Identifies what `dev` holds, if it is one of the formats known here.
/// `Ok(None)`: none matched (or the device is too small for any). An error
/// only when a read fails for another reason than the device's end.
pub fn probe<R: ReadAt + ?Sized>(dev: &R) -> Result<Option<FsId>> {
    let size = dev.size();
    let head_len = size.min(HEAD_SIZE as u64) as usize;
    let mut head = vec![0u8; head_len];
    read(dev, 0, &mut head, "head")?;
    if let Some(mut id) = probe_head(&head) {
        if id.fstype == "vfat"
            && let Some((_, geometry)) = vfat_boot(&head)
        {
            id.label = fat_label(dev, geometry)?;
        }
        return Ok(Some(id));
    }
    // btrfs: its superblock, 4 KiB at 64 KiB.
    let mut sb = vec![0u8; BTRFS_SB_SIZE];
    if read_if_there(dev, BTRFS_OFFSET, &mut sb, "btrfs superblock")?
        && let Some(id) = btrfs(&sb)
    {
        return Ok(Some(id));
    }
    // swap with pages larger than the head: its signature's 10 bytes.
    for page in [16 * 1024u64, 32 * 1024, 64 * 1024] {
        let mut sig = [0u8; 10];
        if read_if_there(dev, page - 10, &mut sig, "swap signature")?
            && let Some(version) = swap_version(&sig)
        {
            let mut hdr = vec![0u8; SWAP_HDR_LEN];
            if read_if_there(dev, 1024, &mut hdr, "swap header")? {
                return Ok(swap(&hdr, version));
            }
        }
    }
    Ok(None)
}

/// Identifies a device from its first bytes alone (at most [`HEAD_SIZE`]
/// are looked at): ext, xfs, vfat and swap with pages of 4 or 8 KiB. The
/// LVM label is weir-lvm's to find; a vfat volume's label is in its root
/// directory, so [`probe`] fills it in (here it is `None`).
pub fn probe_head(head: &[u8]) -> Option<FsId> {
    if let Some(id) = ext(head) {
        return Some(id);
    }
    if let Some(id) = xfs(head) {
        return Some(id);
    }
    for page in [4096usize, 8192] {
        if let Some(sig) = head.get(page - 10..page)
            && let Some(version) = swap_version(sig)
        {
            return head
                .get(1024..1024 + SWAP_HDR_LEN)
                .and_then(|h| swap(h, version));
        }
    }
    vfat(head)
}

/// The [`FsId`] of an LVM PV with `uuid` (blkid's `LVM2_member`).
pub fn lvm_member(uuid: &weir_lvm::Uuid) -> FsId {
    FsId {
        fstype: "LVM2_member",
        uuid: Some(uuid.to_string()),
        label: None,
    }
}

fn read<R: ReadAt + ?Sized>(
    dev: &R,
    offset: u64,
    buf: &mut [u8],
    what: &'static str,
) -> Result<()> {
    dev.read_exact_at(offset, buf)
        .map_err(|source| Error::FsRead {
            what,
            offset,
            source,
        })
}

/// Reads `buf` at `offset`; `false` if the device ends before.
fn read_if_there<R: ReadAt + ?Sized>(
    dev: &R,
    offset: u64,
    buf: &mut [u8],
    what: &'static str,
) -> Result<bool> {
    if offset.saturating_add(buf.len() as u64) > dev.size() {
        return Ok(false);
    }
    match read(dev, offset, buf, what) {
        Ok(()) => Ok(true),
        Err(Error::FsRead { source, .. }) if source.kind() == io::ErrorKind::UnexpectedEof => {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// libblkid's "raw" CRC-32C update (`ul_crc32c`: no inversion on the way
/// in or out), from the crate's standard one.
fn crc32c_raw(seed: u32, data: &[u8]) -> u32 {
    !crc32c::crc32c_append(!seed, data)
}

/// A 16-byte UUID as blkid prints it: lowercase 8-4-4-4-12; `None` when
/// all zeros (blkid sets no `UUID` then).
pub fn uuid_text(bytes: &[u8; 16]) -> Option<String> {
    if bytes.iter().all(|&b| b == 0) {
        return None;
    }
    let mut s = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        let _ = write!(s, "{b:02x}");
    }
    Some(s)
}

fn uuid_at(b: &[u8], at: usize) -> Option<String> {
    let bytes: &[u8; 16] = b.get(at..at + 16)?.try_into().ok()?;
    uuid_text(bytes)
}

/// A label field as blkid keeps it (`blkid_probe_set_label`): at most
/// [`MAX_LABEL`] bytes, cut at the first NUL, trailing C-locale whitespace
/// removed; `None` if nothing is left.
pub fn label_of(field: &[u8]) -> Option<Vec<u8>> {
    let field = &field[..field.len().min(MAX_LABEL)];
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let mut label = &field[..end];
    while let [rest @ .., last] = label
        && matches!(last, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
    {
        label = rest;
    }
    (!label.is_empty()).then(|| label.to_vec())
}

// ---- ext2, ext3, ext4 (and their relatives jbd and ext4dev) ----

const EXT_SB: usize = 1024;
const EXT_SB_LEN: usize = 1024;
const EXT_COMPAT_HAS_JOURNAL: u32 = 0x0004;
const EXT_INCOMPAT_JOURNAL_DEV: u32 = 0x0008;
const EXT_RO_COMPAT_METADATA_CSUM: u32 = 0x0400;
const EXT_FLAGS_TEST_FILESYS: u32 = 0x0004;
/// What ext2 and ext3 understand (blkid's `EXT2_FEATURE_*_SUPP` and
/// `EXT3_FEATURE_*_SUPP`): sparse_super, large_file, btree_dir; filetype,
/// meta_bg, and for ext3 recover. A feature past these is ext4's.
const EXT2_RO_COMPAT_SUPP: u32 = 0x0001 | 0x0002 | 0x0004;
const EXT2_INCOMPAT_SUPP: u32 = 0x0002 | 0x0010;
const EXT3_RO_COMPAT_SUPP: u32 = EXT2_RO_COMPAT_SUPP;
const EXT3_INCOMPAT_SUPP: u32 = 0x0002 | 0x0004 | 0x0010;

/// ext2/3/4 by blkid's rules: magic 0xEF53 at 0x38 of the superblock at
/// 1 KiB, its checksum if it has one (metadata_csum), then the type from
/// the feature flags, tried in blkid's order (jbd, ext4dev, ext4, ext3,
/// ext2).
fn ext(head: &[u8]) -> Option<FsId> {
    let sb = head.get(EXT_SB..EXT_SB + EXT_SB_LEN)?;
    if le16(sb, 0x38) != 0xEF53 {
        return None;
    }
    let compat = le32(sb, 0x5c);
    let incompat = le32(sb, 0x60);
    let ro_compat = le32(sb, 0x64);
    let flags = le32(sb, 0x160);
    if ro_compat & EXT_RO_COMPAT_METADATA_CSUM != 0
        && crc32c_raw(!0, &sb[..0x3fc]) != le32(sb, 0x3fc)
    {
        return None;
    }
    let ext3_unsupported =
        ro_compat & !EXT3_RO_COMPAT_SUPP != 0 || incompat & !EXT3_INCOMPAT_SUPP != 0;
    let fstype = if incompat & EXT_INCOMPAT_JOURNAL_DEV != 0 {
        "jbd"
    } else if flags & EXT_FLAGS_TEST_FILESYS != 0 {
        "ext4dev"
    } else if ext3_unsupported {
        "ext4"
    } else if compat & EXT_COMPAT_HAS_JOURNAL != 0 {
        "ext3"
    } else if ro_compat & !EXT2_RO_COMPAT_SUPP == 0 && incompat & !EXT2_INCOMPAT_SUPP == 0 {
        "ext2"
    } else {
        // Without a journal, with recover (ext3's) but nothing of ext4's:
        // no prober of blkid's takes it.
        return None;
    };
    Some(FsId {
        fstype,
        uuid: uuid_at(sb, 0x68),
        label: label_of(&sb[0x78..0x88]),
    })
}

// ---- xfs ----

const XFS_SB_CRC_OFF: usize = 224;

/// xfs: "XFSB" at 0, the geometry checks of blkid's `xfs_verify_sb`
/// that a superblock cannot fail, and for a v5 superblock its CRC.
fn xfs(head: &[u8]) -> Option<FsId> {
    let sb = head.get(..512)?;
    if &sb[..4] != b"XFSB" {
        return None;
    }
    let blocksize = be32(sb, 4);
    let agcount = be32(sb, 88);
    let version = be16(sb, 100);
    let sectsize = be16(sb, 102);
    let inodesize = be16(sb, 104);
    let inopblock = be16(sb, 106);
    let (blocklog, sectlog, inodelog) = (sb[120], sb[121], sb[122]);
    let pow2_in = |v: u32, log: u8, lo: u32, hi: u32| {
        v.is_power_of_two() && (lo..=hi).contains(&v) && u32::from(log) < 32 && 1 << log == v
    };
    if agcount == 0
        || !pow2_in(u32::from(sectsize), sectlog, 512, 32768)
        || !pow2_in(blocksize, blocklog, 512, 65536)
        || !pow2_in(u32::from(inodesize), inodelog, 256, 2048)
        || blocksize / u32::from(inodesize) != u32::from(inopblock)
    {
        return None;
    }
    if version & 0x000f == 5 {
        let sector = head.get(..usize::from(sectsize))?;
        let crc = crc32c_raw(!0, &sector[..XFS_SB_CRC_OFF]);
        let crc = crc32c_raw(crc, &[0; 4]);
        let crc = crc32c_raw(crc, &sector[XFS_SB_CRC_OFF + 4..]);
        if !crc != le32(sector, XFS_SB_CRC_OFF) {
            return None;
        }
    }
    Some(FsId {
        fstype: "xfs",
        uuid: uuid_at(sb, 32),
        label: label_of(&sb[108..120]),
    })
}

// ---- btrfs ----

const BTRFS_OFFSET: u64 = 64 * 1024;
const BTRFS_SB_SIZE: usize = 4096;
const BTRFS_CSUM_CRC32C: u16 = 0;

/// btrfs: "_BHRfS_M" at 0x40 of the superblock at 64 KiB; its CRC-32C
/// when that is its checksum type (blkid checks the others too; they are
/// taken on the magic alone here).
fn btrfs(sb: &[u8]) -> Option<FsId> {
    let sb = sb.get(..BTRFS_SB_SIZE)?;
    if &sb[0x40..0x48] != b"_BHRfS_M" {
        return None;
    }
    if le16(sb, 0xc4) == BTRFS_CSUM_CRC32C && crc32c::crc32c(&sb[0x20..]) != le32(sb, 0) {
        return None;
    }
    Some(FsId {
        fstype: "btrfs",
        uuid: uuid_at(sb, 0x20),
        label: label_of(&sb[0x12b..0x12b + 256]),
    })
}

// ---- swap ----

/// The part of the swap header (at 1 KiB) that is read: version, last
/// page, bad pages, uuid, label and the padding blkid looks at.
const SWAP_HDR_LEN: usize = 0x2c + 34 * 4;

/// The swap header's version a signature stands for: `SWAPSPACE2` is 1,
/// `SWAP-SPACE` (no uuid, no label) is 0.
fn swap_version(sig: &[u8]) -> Option<u8> {
    match sig {
        b"SWAPSPACE2" => Some(1),
        b"SWAP-SPACE" => Some(0),
        _ => None,
    }
}

/// swap by blkid's rules: a version-1 header must say version 1 (in
/// either byte order) and a last page; uuid and label are believed only
/// when the padding after them is clear.
fn swap(hdr: &[u8], version: u8) -> Option<FsId> {
    let hdr = hdr.get(..SWAP_HDR_LEN)?;
    let none = FsId {
        fstype: "swap",
        uuid: None,
        label: None,
    };
    if version == 0 {
        return Some(none);
    }
    let v = le32(hdr, 0);
    if v != 1 && v.swap_bytes() != 1 || le32(hdr, 4) == 0 {
        return None;
    }
    let pad = 0x2c;
    if le32(hdr, pad + 32 * 4) != 0 || le32(hdr, pad + 33 * 4) != 0 {
        return Some(none);
    }
    Some(FsId {
        uuid: uuid_at(hdr, 0x0c),
        label: label_of(&hdr[0x1c..0x2c]),
        ..none
    })
}

// ---- vfat ----

/// The boot sector's facts the root directory's search needs.
#[derive(Clone, Copy, Debug)]
struct FatGeometry {
    sector_size: u64,
    cluster_sectors: u64,
    reserved: u64,
    fats: u64,
    /// FAT12/16: the FAT's length in sectors and the root's entries.
    fat16: Option<(u64, u64)>,
    /// FAT32: the FAT's length in sectors and the root's first cluster.
    fat32: (u64, u32),
}

/// The most root-directory bytes searched for the volume label: a bound
/// on hostile volumes (blkid follows up to 100 clusters of any size);
/// a real root's label entry is among its first few.
const FAT_ROOT_MAX: u64 = 1 << 20;
/// The most clusters of a FAT32 root followed, as blkid does.
const FAT32_ROOT_CLUSTERS: u32 = 100;
const FAT_DIR_ENTRY: u64 = 32;

/// vfat (FAT12/16/32) by the checks of blkid's `fat_valid_superblock`
/// that need only the boot sector. The label is left to [`fat_label`]:
/// blkid's `LABEL` is the volume entry of the root directory (the boot
/// sector's copy is its `LABEL_FATBOOT`).
fn vfat(head: &[u8]) -> Option<FsId> {
    vfat_boot(head).map(|(id, _)| id)
}

fn vfat_boot(head: &[u8]) -> Option<(FsId, FatGeometry)> {
    let bs = head.get(..512)?;
    let fat_magic = |at: usize, m: &[u8]| bs[at..at + m.len()] == *m;
    let has_magic = fat_magic(0x52, b"MSWIN")
        || fat_magic(0x52, b"FAT32   ")
        || fat_magic(0x36, b"MSDOS")
        || fat_magic(0x36, b"FAT16   ")
        || fat_magic(0x36, b"FAT12   ")
        || fat_magic(0x36, b"FAT     ")
        || ((bs[0] == 0xeb || bs[0] == 0xe9) && bs[0x1fe] == 0x55 && bs[0x1ff] == 0xaa);
    if !has_magic {
        return None;
    }
    let sector_size = le16(bs, 0x0b);
    let cluster_sectors = bs[0x0d];
    let reserved = le16(bs, 0x0e);
    let fats = bs[0x10];
    let media = bs[0x15];
    if fats == 0
        || reserved == 0
        || !(media >= 0xf8 || media == 0xf0)
        || !cluster_sectors.is_power_of_two()
        || !sector_size.is_power_of_two()
        || !(512..=4096).contains(&sector_size)
    {
        return None;
    }
    let fat16_length = le16(bs, 0x16);
    let (sign, serial) = if fat16_length != 0 {
        (bs[0x26], 0x27)
    } else {
        (bs[0x42], 0x43)
    };
    let uuid = matches!(sign, 0x28 | 0x29)
        .then(|| [bs[serial + 3], bs[serial + 2], bs[serial + 1], bs[serial]])
        .filter(|s| s.iter().any(|&b| b != 0))
        .map(|s| format!("{:02X}{:02X}-{:02X}{:02X}", s[0], s[1], s[2], s[3]));
    let geometry = FatGeometry {
        sector_size: u64::from(sector_size),
        cluster_sectors: u64::from(cluster_sectors),
        reserved: u64::from(reserved),
        fats: u64::from(fats),
        fat16: (fat16_length != 0).then(|| (u64::from(fat16_length), u64::from(le16(bs, 0x11)))),
        fat32: (u64::from(le32(bs, 0x24)), le32(bs, 0x2c)),
    };
    let id = FsId {
        fstype: "vfat",
        uuid,
        label: None,
    };
    Some((id, geometry))
}

/// blkid's `search_fat_label` over `entries` directory entries at
/// `offset`: the first volume-label entry (not free, no cluster, not a
/// long-name part), its 11 bytes; `None` at the end marker, or when a
/// read fails. `budget` counts the bytes searched, across calls.
fn fat_dir_label<R: ReadAt + ?Sized>(
    dev: &R,
    offset: u64,
    entries: u64,
    budget: &mut u64,
) -> Result<Option<[u8; 11]>> {
    let mut block = [0u8; 4096];
    let mut i = 0;
    while i < entries && *budget > 0 {
        let n = (entries - i).min(block.len() as u64 / FAT_DIR_ENTRY);
        let len = (n * FAT_DIR_ENTRY) as usize;
        let at = offset.saturating_add(i * FAT_DIR_ENTRY);
        if !read_if_there(dev, at, &mut block[..len], "vfat root directory")? {
            return Ok(None);
        }
        *budget = budget.saturating_sub(len as u64);
        for ent in block[..len].chunks_exact(FAT_DIR_ENTRY as usize) {
            let attr = ent[11];
            if ent[0] == 0 {
                return Ok(None);
            }
            if ent[0] == 0xe5 || le16(ent, 20) != 0 || le16(ent, 26) != 0 || attr & 0x3f == 0x0f {
                continue;
            }
            if attr & (0x08 | 0x10) == 0x08 {
                let mut name = [0u8; 11];
                name.copy_from_slice(&ent[..11]);
                if name[0] == 0x05 {
                    name[0] = 0xe5;
                }
                return Ok(Some(name));
            }
        }
        i += n;
    }
    Ok(None)
}

/// The volume label of a FAT volume: the root directory's label entry,
/// found as blkid finds it (FAT12/16: the fixed root after the FATs;
/// FAT32: the root's clusters, following the FAT).
fn fat_label<R: ReadAt + ?Sized>(dev: &R, g: FatGeometry) -> Result<Option<Vec<u8>>> {
    let mut budget = FAT_ROOT_MAX;
    let found = if let Some((fat_length, entries)) = g.fat16 {
        let root = (g.reserved + g.fats * fat_length) * g.sector_size;
        fat_dir_label(dev, root, entries, &mut budget)?
    } else {
        let (fat_length, mut next) = g.fat32;
        let data_start = g.reserved + g.fats * fat_length;
        let cluster_bytes = g.cluster_sectors * g.sector_size;
        let fat_entries = fat_length * g.sector_size / 4;
        let mut found = None;
        let mut loops = FAT32_ROOT_CLUSTERS;
        // blkid's loop: while next && next < entries && --maxloop.
        while next >= 2 && u64::from(next) < fat_entries && loops > 1 && budget > 0 {
            loops -= 1;
            let at = (data_start + u64::from(next - 2) * g.cluster_sectors) * g.sector_size;
            found = fat_dir_label(dev, at, cluster_bytes / FAT_DIR_ENTRY, &mut budget)?;
            if found.is_some() {
                break;
            }
            let mut entry = [0u8; 4];
            let fat_at = g.reserved * g.sector_size + u64::from(next) * 4;
            if !read_if_there(dev, fat_at, &mut entry, "vfat FAT")? {
                break;
            }
            next = u32::from_le_bytes(entry) & 0x0fff_ffff;
        }
        found
    };
    Ok(found.and_then(|name| label_of(&name)))
}

#[cfg(test)]
mod tests;
