//! The table form of `weir mounts`: its columns, findmnt-like, and the
//! rendering of rows.
//!
//! Bytes (paths, sources, options) are shown with the log's text escaping
//! ([`escape`]), so a newline in a mount point cannot split a row and a byte
//! that is not UTF-8 still shows. Columns are left-aligned and padded to
//! their widest cell; the last one is not padded, so no line ends in blanks.

use std::fmt::Write as _;

use weir_mounts::{Mount, Propagation};

use crate::bytes::escape;
use crate::error::{Error, Result};
use crate::table::MAX_COLUMNS;

/// One column of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// The mount id.
    Id,
    /// The parent mount id.
    Parent,
    /// The 32-bit id of mountinfo.
    OldId,
    /// The mount point.
    Target,
    /// The root of the mount within its filesystem.
    Root,
    /// The source (device, or what the filesystem was given).
    Source,
    /// The filesystem type, with its subtype.
    Fstype,
    /// Per-mount and superblock options together, as findmnt shows them.
    Options,
    /// Per-mount options only.
    VfsOptions,
    /// Superblock options and the filesystem's own.
    FsOptions,
    /// Shared and master peer groups.
    Propagation,
    /// The device number.
    MajMin,
}

impl Column {
    /// Every column with its header, which is also its name for `-o`.
    const ALL: [(Column, &'static str); 12] = [
        (Column::Id, "ID"),
        (Column::Parent, "PARENT"),
        (Column::OldId, "OLD_ID"),
        (Column::Target, "TARGET"),
        (Column::Root, "ROOT"),
        (Column::Source, "SOURCE"),
        (Column::Fstype, "FSTYPE"),
        (Column::Options, "OPTIONS"),
        (Column::VfsOptions, "VFS_OPTIONS"),
        (Column::FsOptions, "FS_OPTIONS"),
        (Column::Propagation, "PROPAGATION"),
        (Column::MajMin, "MAJ:MIN"),
    ];

    fn header(self) -> &'static str {
        Column::ALL
            .iter()
            .find(|(c, _)| *c == self)
            .map_or("", |(_, h)| h)
    }

    /// The column's cell for one mount.
    fn cell(self, m: &Mount) -> String {
        match self {
            Column::Id => m.id.to_string(),
            Column::Parent => m.parent_id.to_string(),
            Column::OldId => m.old_id.to_string(),
            Column::Target => escape(&m.mount_point),
            Column::Root => escape(&m.root),
            Column::Source => escape(&m.source),
            Column::Fstype => escape(&m.fstype_full()),
            Column::Options => escape(&m.options()),
            Column::VfsOptions => m.flags.to_text(),
            Column::FsOptions => escape(&m.super_options()),
            Column::Propagation => propagation_word(&m.propagation),
            Column::MajMin => m.dev_text(),
        }
    }
}

/// The columns `-o` chose, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Columns(pub Vec<Column>);

impl Columns {
    /// Parses a comma-separated list of column names, case-insensitive;
    /// `-` may stand for `_` (findmnt spells `VFS-OPTIONS`). At most
    /// [`MAX_COLUMNS`], as for the LVM reports (a column may repeat).
    pub fn parse(s: &str) -> Result<Columns> {
        let mut cols = Vec::new();
        for name in s.split(',') {
            let want = name.trim().to_ascii_uppercase().replace('-', "_");
            let Some((c, _)) = Column::ALL.iter().find(|(_, h)| *h == want) else {
                let valid: Vec<&str> = Column::ALL.iter().map(|(_, h)| *h).collect();
                return Err(Error::UnknownMountColumn {
                    name: name.to_owned(),
                    valid: valid.join(", "),
                });
            };
            if cols.len() == MAX_COLUMNS {
                return Err(Error::TooManyColumns);
            }
            cols.push(*c);
        }
        Ok(Columns(cols))
    }
}

/// The table: a header line and one line per mount, each ending in `\n`.
pub fn render(cols: &Columns, mounts: &[Mount]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::with_capacity(mounts.len() + 1);
    rows.push(cols.0.iter().map(|c| c.header().to_owned()).collect());
    rows.extend(
        mounts
            .iter()
            .map(|m| cols.0.iter().map(|c| c.cell(m)).collect()),
    );
    let mut widths = vec![0; cols.0.len()];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let last = row.len().saturating_sub(1);
        for (i, cell) in row.iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                // Rust pads by chars, the unit `widths` counts in.
                let _ = write!(out, "{cell:<w$} ", w = widths[i]);
            }
        }
        out.push('\n');
    }
    out
}

/// The propagation with commas for blanks (`shared:1,master:2`): one word,
/// for a table cell and a `weir mounts watch` line.
pub fn propagation_word(p: &Propagation) -> String {
    p.to_text().replace(' ', ",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_mounts::{MountFlags, Propagation, SuperFlags};

    fn mount(id: u64, point: &[u8]) -> Mount {
        Mount {
            id,
            parent_id: 1,
            old_id: 20,
            old_parent_id: 1,
            major: 0,
            minor: 42,
            root: b"/".as_slice().into(),
            mount_point: point.into(),
            fstype: b"fuse".as_slice().into(),
            subtype: Some(b"sshfs".as_slice().into()),
            source: b"none".as_slice().into(),
            flags: MountFlags(MountFlags::RDONLY.0 | MountFlags::NOSUID.0),
            super_flags: SuperFlags::default(),
            fs_options: b"size=4k".as_slice().into(),
            propagation: Propagation {
                shared: Some(3),
                master: Some(4),
                ..Propagation::default()
            },
        }
    }

    #[test]
    fn parses_columns() {
        let c = Columns::parse("target,Maj:Min,vfs-options").unwrap();
        assert_eq!(c.0, [Column::Target, Column::MajMin, Column::VfsOptions]);
        let e = Columns::parse("TARGET,SIZE").unwrap_err();
        assert!(
            matches!(&e, Error::UnknownMountColumn { name, .. } if name == "SIZE"),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(e.contains("\"SIZE\"") && e.contains("PROPAGATION"), "{e}");
        assert!(Columns::parse("").is_err());
    }

    #[test]
    fn at_most_max_columns_repeats_counted() {
        let at_most = vec!["id"; MAX_COLUMNS].join(",");
        assert_eq!(Columns::parse(&at_most).unwrap().0.len(), MAX_COLUMNS);
        let one_more = format!("{at_most},target");
        assert_eq!(Columns::parse(&one_more), Err(Error::TooManyColumns));
        // Names are read in order; the first fault is the one reported.
        let unknown_early = format!("SIZE,{one_more}");
        assert!(matches!(
            Columns::parse(&unknown_early),
            Err(Error::UnknownMountColumn { .. })
        ));
    }

    #[test]
    fn renders_escaped_padded_rows() {
        let cols = Columns::parse("TARGET,FSTYPE,OPTIONS,FS_OPTIONS,PROPAGATION,ID").unwrap();
        let t = render(&cols, &[mount(7, b"/a\nb\xff"), mount(8, "/é".as_bytes())]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines,
            [
                "TARGET      FSTYPE     OPTIONS           FS_OPTIONS PROPAGATION       ID",
                "/a\\x0ab\\xff fuse.sshfs ro,nosuid,size=4k rw,size=4k shared:3,master:4 7",
                "/é          fuse.sshfs ro,nosuid,size=4k rw,size=4k shared:3,master:4 8",
            ]
        );
    }
}
