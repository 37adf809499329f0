//! The columns of the `weir devices` table and `-o` (the API's `columns`)
//! choosing among them as lsblk does: lsblk's names where weir has the
//! data (`NAME`, `MAJ:MIN`, `RM`, `SIZE`, `RO`, `TYPE`, `MOUNTPOINTS`,
//! ...), case-insensitive, `+COLUMNS` adding to the default ones, plus
//! weir's own `LVM` (what probing found: `PV of vg0`, `error: ...`) and
//! `VG`. [`FS`] is lsblk's `-f` set, less the columns weir cannot fill.

use crate::error::{Error, Result};
use crate::table::{Align, MAX_COLUMNS};

/// One column of `weir devices`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DevColumn {
    /// The name, drawn in the tree.
    Name,
    /// The kernel's name, never drawn.
    Kname,
    /// The device node.
    Path,
    /// `major:minor`.
    MajMin,
    /// Removable.
    Rm,
    /// The size, in lsblk's units.
    Size,
    /// Read-only.
    Ro,
    /// `disk`, `part`, `loop`.
    Type,
    /// The first mount point.
    Mountpoint,
    /// Every mount point, one per line.
    Mountpoints,
    /// What the device holds, as blkid names it (`ext4`, `swap`,
    /// `LVM2_member`), else the mounted filesystem's type.
    Fstype,
    /// The filesystem's UUID, as blkid prints it.
    Uuid,
    /// The filesystem's label.
    Label,
    /// Rotational.
    Rota,
    /// The logical sector size.
    LogSec,
    /// A loop device's backing file.
    BackFile,
    /// The model.
    Model,
    /// The serial.
    Serial,
    /// The WWN.
    Wwn,
    /// The disk sequence number.
    DiskSeq,
    /// The parent's (disk's) name of a partition.
    Pkname,
    /// What probing found, in words (weir's own).
    Lvm,
    /// The VG of a PV (weir's own).
    Vg,
}

/// Every column: the header (also its name for `-o`) and alignment.
const ALL: [(DevColumn, &str, Align); 23] = [
    (DevColumn::Name, "NAME", Align::Left),
    (DevColumn::Kname, "KNAME", Align::Left),
    (DevColumn::Path, "PATH", Align::Left),
    (DevColumn::MajMin, "MAJ:MIN", Align::Left),
    (DevColumn::Rm, "RM", Align::Right),
    (DevColumn::Size, "SIZE", Align::Right),
    (DevColumn::Ro, "RO", Align::Right),
    (DevColumn::Type, "TYPE", Align::Left),
    (DevColumn::Mountpoint, "MOUNTPOINT", Align::Left),
    (DevColumn::Mountpoints, "MOUNTPOINTS", Align::Left),
    (DevColumn::Fstype, "FSTYPE", Align::Left),
    (DevColumn::Uuid, "UUID", Align::Left),
    (DevColumn::Label, "LABEL", Align::Left),
    (DevColumn::Rota, "ROTA", Align::Right),
    (DevColumn::LogSec, "LOG-SEC", Align::Right),
    (DevColumn::BackFile, "BACK-FILE", Align::Left),
    (DevColumn::Model, "MODEL", Align::Left),
    (DevColumn::Serial, "SERIAL", Align::Left),
    (DevColumn::Wwn, "WWN", Align::Left),
    (DevColumn::DiskSeq, "DISK-SEQ", Align::Right),
    (DevColumn::Pkname, "PKNAME", Align::Left),
    (DevColumn::Lvm, "LVM", Align::Left),
    (DevColumn::Vg, "VG", Align::Left),
];

/// lsblk's default columns.
pub const DEFAULT: [DevColumn; 7] = [
    DevColumn::Name,
    DevColumn::MajMin,
    DevColumn::Rm,
    DevColumn::Size,
    DevColumn::Ro,
    DevColumn::Type,
    DevColumn::Mountpoints,
];

/// `-f`: lsblk's `-f` columns (`NAME,FSTYPE,FSVER,LABEL,UUID,FSAVAIL,
/// FSUSE%,MOUNTPOINTS`) less `FSVER`, `FSAVAIL` and `FSUSE%`, which weir
/// does not read (the version is in no superblock field blkid shares with
/// the others; the space needs a `statfs` of a mount).
pub const FS: [DevColumn; 5] = [
    DevColumn::Name,
    DevColumn::Fstype,
    DevColumn::Label,
    DevColumn::Uuid,
    DevColumn::Mountpoints,
];

impl DevColumn {
    /// The header, which is also the column's name for `-o`.
    pub fn header(self) -> &'static str {
        ALL.iter()
            .find(|(c, ..)| *c == self)
            .map_or("?", |(_, h, _)| h)
    }

    /// How its cells are aligned.
    pub fn align(self) -> Align {
        ALL.iter()
            .find(|(c, ..)| *c == self)
            .map_or(Align::Left, |(.., a)| *a)
    }

    /// The column `name` names, case-insensitively.
    fn named(name: &str) -> Option<DevColumn> {
        ALL.iter()
            .find(|(_, h, _)| h.eq_ignore_ascii_case(name))
            .map(|(c, ..)| *c)
    }

    fn index(self) -> u8 {
        ALL.iter().position(|(c, ..)| *c == self).unwrap_or(0) as u8
    }
}

/// A choice of `weir devices` columns, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevColumns(pub Vec<DevColumn>);

impl Default for DevColumns {
    fn default() -> DevColumns {
        DevColumns(DEFAULT.to_vec())
    }
}

impl DevColumns {
    /// Parses `-o`: comma-separated names, or `+NAMES` to add to the
    /// default columns.
    pub fn parse(spec: &str) -> Result<DevColumns> {
        let (mut cols, list) = match spec.strip_prefix('+') {
            Some(rest) => (DEFAULT.to_vec(), rest),
            None => (Vec::new(), spec),
        };
        for name in list.split(',') {
            let name = name.trim();
            if name.is_empty() {
                return Err(Error::EmptyColumn {
                    spec: spec.to_owned(),
                });
            }
            if cols.len() >= MAX_COLUMNS {
                return Err(Error::TooManyColumns);
            }
            let c = DevColumn::named(name).ok_or_else(|| Error::UnknownColumn {
                name: name.to_owned(),
                listing: "weir devices",
                valid: valid(),
            })?;
            cols.push(c);
        }
        Ok(DevColumns(cols))
    }

    /// The columns as bytes, for a cache key.
    pub fn key(&self) -> Vec<u8> {
        self.0.iter().map(|c| c.index()).collect()
    }

    /// The headers, in order.
    pub fn headers(&self) -> Vec<&'static str> {
        self.0.iter().map(|c| c.header()).collect()
    }
}

/// Every column's name, for an error.
fn valid() -> String {
    ALL.iter()
        .map(|(_, h, _)| *h)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_additions() {
        let c = DevColumns::parse("name,Size,TYPE,mountpoints").unwrap();
        assert_eq!(c.headers(), ["NAME", "SIZE", "TYPE", "MOUNTPOINTS"]);
        let c = DevColumns::parse("+fstype,lvm").unwrap();
        assert_eq!(
            c.headers(),
            [
                "NAME",
                "MAJ:MIN",
                "RM",
                "SIZE",
                "RO",
                "TYPE",
                "MOUNTPOINTS",
                "FSTYPE",
                "LVM"
            ]
        );
        assert_eq!(DevColumns::parse("maj:min").unwrap().0, [DevColumn::MajMin]);
        let c = DevColumns::parse("name,fstype,label,uuid,mountpoints").unwrap();
        assert_eq!(c.0, FS);
    }

    #[test]
    fn refuses_unknown_empty_and_too_many() {
        let e = DevColumns::parse("name,nope").unwrap_err();
        assert!(
            e.to_string().starts_with(
                "unknown column \"nope\" for weir devices (valid columns: NAME, KNAME"
            ),
            "{e}"
        );
        assert!(matches!(
            DevColumns::parse(""),
            Err(Error::EmptyColumn { .. })
        ));
        assert!(matches!(
            DevColumns::parse("name,,size"),
            Err(Error::EmptyColumn { .. })
        ));
        let many = vec!["name"; MAX_COLUMNS + 1].join(",");
        assert_eq!(DevColumns::parse(&many), Err(Error::TooManyColumns));
        assert!(DevColumns::parse(&vec!["name"; MAX_COLUMNS].join(",")).is_ok());
    }
}
