//! The table form of `weir mounts`: its columns, findmnt-like, and the
//! rendering of rows, as a list or as findmnt's tree.
//!
//! Bytes (paths, sources, options) are shown with the log's text escaping
//! ([`escape`]), so a newline in a mount point cannot split a row and a byte
//! that is not UTF-8 still shows. Text columns are left-aligned and padded
//! to their widest cell, numbers right-aligned, as findmnt aligns them; the
//! last column is not padded on the right, so no line ends in blanks (but
//! for findmnt's MAJ:MIN, whose cell is itself padded).
//!
//! Most cells come from the [`Mount`] alone. The others need a look at the
//! filesystem (statvfs for the df columns, the device's superblock for
//! UUID and LABEL): the caller gathers them first into [`Facts`], so
//! that rendering stays pure and the daemon and the CLI, given the same
//! facts, print the same bytes.

use std::collections::HashMap;

use weir_devices::{DevNum, FsId, Inventory};
use weir_mounts::usage::Usages;
use weir_mounts::{Mount, Propagation};

use crate::bytes::escape;
use crate::error::{Error, Result};
use crate::mounts_df::{self, Figure};
use crate::mounts_tree::{self, Charset};
use crate::table::{Align, MAX_COLUMNS};

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
    /// The filesystem's size (statvfs).
    Size,
    /// The bytes an unprivileged user may still take (statvfs).
    Avail,
    /// The bytes in use (statvfs).
    Used,
    /// The share of blocks in use (statvfs).
    UsePercent,
    /// The filesystem's UUID, from its device's superblock.
    Uuid,
    /// The filesystem's label, from its device's superblock.
    Label,
}

/// What a column's cells are made from: the mount alone, or a fact the
/// caller gathered ([`Facts`]). A new gathered column is a variant here, a
/// field in `Facts`, and a gathering step for the callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Only the mount.
    Mount,
    /// A statvfs reading of the mount point.
    Usage,
    /// What the superblock of the mount's device says (a device probe).
    Device,
}

/// What the renderer is given besides the mounts: facts read from the
/// filesystems, by mount id, for the columns whose [`Source`] needs them.
/// A mount without one shows empty cells there.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// statvfs readings ([`weir_mounts::usage::gather`]).
    pub usage: Usages,
    /// The filesystems' ids, by device number ([`Facts::filesystems`]).
    pub fs: HashMap<DevNum, FsId>,
}

impl Facts {
    /// The facts `cols` show, and no more: statvfs readings for the df
    /// columns (statvfs can block on a hung server), the filesystems' ids
    /// from `filesystems` (which may have to read every device) for UUID
    /// and LABEL.
    pub fn gather(
        cols: &Columns,
        mounts: &[Mount],
        filesystems: impl FnOnce() -> HashMap<DevNum, FsId>,
    ) -> Facts {
        Facts {
            usage: if cols.needs(Source::Usage) {
                weir_mounts::usage::gather(mounts)
            } else {
                Usages::default()
            },
            fs: if cols.needs(Source::Device) {
                filesystems()
            } else {
                HashMap::new()
            },
        }
    }

    /// The ids of the mounted devices that `inv` probed, as findmnt reads
    /// them with libblkid: a mount of a device weir did not read (a
    /// filtered one, a partitioned disk) or of no device (tmpfs, 0:N) has
    /// none.
    pub fn filesystems(mounts: &[Mount], inv: &Inventory) -> HashMap<DevNum, FsId> {
        mounts
            .iter()
            .filter_map(|m| {
                let dn = DevNum {
                    major: m.major,
                    minor: m.minor,
                };
                Some((dn, inv.fsid(dn)?.clone()))
            })
            .collect()
    }
}

/// How the table is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// findmnt's tree (drawn in the TARGET column; a choice without TARGET
    /// prints the list, as findmnt does).
    pub tree: bool,
    /// The tree in ASCII (`--ascii`).
    pub ascii: bool,
    /// Sizes in bytes rather than `1.9G` (`--bytes`).
    pub bytes: bool,
}

impl Column {
    /// Every column with its header, which is also its name for `-o`.
    const ALL: [(Column, &'static str); 18] = [
        (Column::Id, "ID"),
        (Column::Parent, "PARENT"),
        (Column::OldId, "OLD_ID"),
        (Column::Target, "TARGET"),
        (Column::Root, "FSROOT"),
        (Column::Source, "SOURCE"),
        (Column::Fstype, "FSTYPE"),
        (Column::Options, "OPTIONS"),
        (Column::VfsOptions, "VFS_OPTIONS"),
        (Column::FsOptions, "FS_OPTIONS"),
        (Column::Propagation, "PROPAGATION"),
        (Column::MajMin, "MAJ:MIN"),
        (Column::Size, "SIZE"),
        (Column::Avail, "AVAIL"),
        (Column::Used, "USED"),
        (Column::UsePercent, "USE%"),
        (Column::Uuid, "UUID"),
        (Column::Label, "LABEL"),
    ];

    fn header(self) -> &'static str {
        Column::ALL
            .iter()
            .find(|(c, _)| *c == self)
            .map_or("", |(_, h)| h)
    }

    /// Numbers are right-aligned, as findmnt aligns them.
    fn align(self) -> Align {
        match self {
            Column::Id
            | Column::Parent
            | Column::OldId
            | Column::Size
            | Column::Avail
            | Column::Used
            | Column::UsePercent => Align::Right,
            _ => Align::Left,
        }
    }

    /// findmnt's absolute width hint: libsmartcols widens a column whose
    /// cells are at least as wide as its header, but narrower than this,
    /// to this (a SIZE column of `252G` cells is 5 wide). 0: none.
    fn width_hint(self) -> usize {
        match self {
            Column::Size | Column::Avail | Column::Used => 5,
            Column::UsePercent => 3,
            Column::Uuid => 36,
            Column::Id => 2,
            Column::MajMin => 6,
            _ => 0,
        }
    }

    /// Where the column's cells come from.
    pub fn source(self) -> Source {
        match self {
            Column::Size | Column::Avail | Column::Used | Column::UsePercent => Source::Usage,
            Column::Uuid | Column::Label => Source::Device,
            _ => Source::Mount,
        }
    }

    /// The column's cell for one mount.
    fn cell(self, m: &Mount, facts: &Facts, style: Style) -> String {
        let df = |f| mounts_df::cell(f, facts.usage.get(&m.id), style.bytes);
        let fs = || {
            facts.fs.get(&DevNum {
                major: m.major,
                minor: m.minor,
            })
        };
        match self {
            Column::Id => m.id.to_string(),
            Column::Parent => m.parent_id.to_string(),
            Column::OldId => m.old_id.to_string(),
            Column::Target => escape(&m.mount_point),
            Column::Root => escape(&m.root),
            Column::Source => source_cell(m),
            Column::Fstype => escape(&m.fstype_full()),
            Column::Options => escape(&m.options()),
            Column::VfsOptions => m.flags.to_text(),
            Column::FsOptions => escape(&m.super_options()),
            Column::Propagation => propagation_word(&m.propagation),
            // findmnt's `%3u:%-3u`, which lines the colons up.
            Column::MajMin => format!("{:>3}:{:<3}", m.major, m.minor),
            Column::Size => df(Figure::Size),
            Column::Avail => df(Figure::Avail),
            Column::Used => df(Figure::Used),
            Column::UsePercent => df(Figure::UsePercent),
            Column::Uuid => fs().and_then(|f| f.uuid.clone()).unwrap_or_default(),
            Column::Label => fs()
                .and_then(|f| f.label.as_deref())
                .map(escape)
                .unwrap_or_default(),
        }
    }
}

/// SOURCE as findmnt shows it: a mount of a directory below the
/// filesystem's top (a bind mount of a subtree, a btrfs subvolume) has
/// that directory after its source, in brackets (`/dev/sda2[/@home]`).
fn source_cell(m: &Mount) -> String {
    if m.source.is_empty() || *m.root == *b"/" {
        return escape(&m.source);
    }
    format!("{}[{}]", escape(&m.source), escape(&m.root))
}

/// Names `-o` takes besides the headers: weir's first name of FSROOT.
const ALIASES: [(&str, Column); 1] = [("ROOT", Column::Root)];

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
            let found = Column::ALL
                .iter()
                .find(|(_, h)| *h == want)
                .map(|(c, _)| c)
                .or_else(|| ALIASES.iter().find(|(a, _)| *a == want).map(|(_, c)| c));
            let Some(c) = found else {
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

    /// Whether any column needs facts from `source`, so that a caller
    /// gathers only what is shown (statvfs can block on a hung server).
    pub fn needs(&self, source: Source) -> bool {
        self.0.iter().any(|c| c.source() == source)
    }
}

/// The table: a header line and one line per mount, each ending in `\n`;
/// the mounts in their order, or in tree order with `style.tree`.
pub fn render(cols: &Columns, mounts: &[Mount], facts: &Facts, style: Style) -> String {
    let tree = style.tree && cols.0.contains(&Column::Target);
    let rows: Vec<(usize, String)> = if tree {
        let charset = if style.ascii {
            Charset::Ascii
        } else {
            Charset::Utf8
        };
        mounts_tree::order(mounts, charset)
    } else {
        (0..mounts.len()).map(|i| (i, String::new())).collect()
    };
    let mut table: Vec<Vec<String>> = Vec::with_capacity(rows.len() + 1);
    table.push(cols.0.iter().map(|c| c.header().to_owned()).collect());
    table.extend(rows.iter().map(|(i, prefix)| {
        let m = &mounts[*i];
        cols.0
            .iter()
            .map(|c| match c {
                Column::Target => format!("{prefix}{}", c.cell(m, facts, style)),
                _ => c.cell(m, facts, style),
            })
            .collect()
    }));
    let mut widths = vec![0; cols.0.len()];
    for row in &table[1..] {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // libsmartcols' rule: the header is the least width; a column whose
    // cells reach it takes the width hint if they fall short of that.
    for ((w, c), header) in widths.iter_mut().zip(&cols.0).zip(&table[0]) {
        let (least, hint) = (header.chars().count(), c.width_hint());
        if *w < least {
            *w = least;
        } else if *w < hint && least < hint {
            *w = hint;
        }
    }
    let mut out = String::new();
    for row in &table {
        let last = row.len().saturating_sub(1);
        for (i, cell) in row.iter().enumerate() {
            // Rust pads by chars, the unit `widths` counts in.
            let w = widths[i];
            match cols.0[i].align() {
                Align::Right => out.push_str(&format!("{cell:>w$}")),
                Align::Left if i == last => out.push_str(cell),
                Align::Left => out.push_str(&format!("{cell:<w$}")),
            }
            if i != last {
                out.push(' ');
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
        let e = Columns::parse("TARGET,NOPE").unwrap_err();
        assert!(
            matches!(&e, Error::UnknownMountColumn { name, .. } if name == "NOPE"),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(e.contains("\"NOPE\"") && e.contains("USE%"), "{e}");
        let df = Columns::parse("size,Avail,USED,use%").unwrap();
        assert!(df.needs(Source::Usage) && !df.needs(Source::Mount));
        assert!(!Columns::parse("target").unwrap().needs(Source::Usage));
        assert!(Columns::parse("").is_err());
    }

    #[test]
    fn a_mount_of_a_subtree_shows_its_root_after_its_source_as_findmnt_does() {
        let cols = Columns::parse("SOURCE,root,FSROOT").unwrap();
        assert_eq!(cols.0, [Column::Source, Column::Root, Column::Root]);
        let mut sub = mount(7, b"/b");
        sub.root = b"/sub\nx".as_slice().into();
        let mut nameless = mount(8, b"/c");
        nameless.root = b"/d".as_slice().into();
        nameless.source = Box::default();
        let mounts = [mount(6, b"/a"), sub, nameless];
        let t = render(&cols, &mounts, &Facts::default(), Style::default());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines,
            [
                "SOURCE          FSROOT    FSROOT",
                "none            /         /",
                "none[/sub\\x0ax] /sub\\x0ax /sub\\x0ax",
                "                /d        /d",
            ]
        );
    }

    #[test]
    fn at_most_max_columns_repeats_counted() {
        let at_most = vec!["id"; MAX_COLUMNS].join(",");
        assert_eq!(Columns::parse(&at_most).unwrap().0.len(), MAX_COLUMNS);
        let one_more = format!("{at_most},target");
        assert_eq!(Columns::parse(&one_more), Err(Error::TooManyColumns));
        // Names are read in order; the first fault is the one reported.
        let unknown_early = format!("NOPE,{one_more}");
        assert!(matches!(
            Columns::parse(&unknown_early),
            Err(Error::UnknownMountColumn { .. })
        ));
    }

    #[test]
    fn renders_escaped_padded_rows() {
        let cols = Columns::parse("TARGET,FSTYPE,OPTIONS,FS_OPTIONS,PROPAGATION,ID").unwrap();
        let mounts = [mount(7, b"/a\nb\xff"), mount(8, "/é".as_bytes())];
        let t = render(&cols, &mounts, &Facts::default(), Style::default());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines,
            [
                "TARGET      FSTYPE     OPTIONS           FS_OPTIONS PROPAGATION       ID",
                "/a\\x0ab\\xff fuse.sshfs ro,nosuid,size=4k rw,size=4k shared:3,master:4  7",
                "/é          fuse.sshfs ro,nosuid,size=4k rw,size=4k shared:3,master:4  8",
            ]
        );
    }

    #[test]
    fn numbers_right_df_cells_empty_without_a_reading() {
        let cols = Columns::parse("ID,MAJ:MIN,TARGET,SIZE,USE%").unwrap();
        let mut m7 = mount(7, b"/a");
        m7.parent_id = 12;
        let mut m12 = mount(12, b"/");
        m12.parent_id = 1;
        let mut facts = Facts::default();
        let usage = weir_mounts::usage::Usage {
            frsize: 4096,
            blocks: 512,
            bfree: 256,
            bavail: 128,
        };
        facts.usage.insert(12, usage);
        let mounts = [m7, m12];
        let list = render(&cols, &mounts, &facts, Style::default());
        assert_eq!(
            list,
            "ID MAJ:MIN TARGET SIZE USE%\n \
             7   0:42  /a              \n\
             12   0:42  /        2M  50%\n"
        );
        let style = Style {
            tree: true,
            bytes: true,
            ascii: false,
        };
        let tree = render(&cols, &mounts, &facts, style);
        assert_eq!(
            tree,
            "ID MAJ:MIN TARGET    SIZE USE%\n\
             12   0:42  /      2097152  50%\n \
             7   0:42  └─/a               \n"
        );
        // Without TARGET there is nothing to draw the tree in: the list.
        let ids = Columns::parse("ID").unwrap();
        assert_eq!(render(&ids, &mounts, &facts, style), "ID\n 7\n12\n");
        // Cells as wide as the header (4) but short of SIZE's hint (5)
        // make the column 5 wide; narrower cells leave it at the header's.
        let size = Columns::parse("SIZE").unwrap();
        let wide = weir_mounts::usage::Usage {
            frsize: 1 << 30,
            blocks: 252,
            bfree: 0,
            bavail: 0,
        };
        facts.usage.insert(12, wide);
        let list = Style::default();
        assert_eq!(
            render(&size, &mounts, &facts, list),
            " SIZE\n     \n 252G\n"
        );
        facts.usage.insert(12, usage);
        assert_eq!(render(&size, &mounts, &facts, list), "SIZE\n    \n  2M\n");
    }

    #[test]
    fn uuid_and_label_come_from_the_device_they_are_for() {
        let cols = Columns::parse("TARGET,UUID,LABEL").unwrap();
        assert!(cols.needs(Source::Device) && !cols.needs(Source::Usage));
        let mut ext4 = mount(3, b"/data");
        (ext4.major, ext4.minor) = (7, 1);
        let tmp = mount(4, b"/tmp");
        let mut facts = Facts::default();
        facts.fs.insert(
            DevNum { major: 7, minor: 1 },
            FsId {
                fstype: "ext4",
                uuid: Some("5eed0e55-1111-4222-8333-444455556666".to_owned()),
                label: Some(b"my\nlabel".to_vec()),
            },
        );
        let t = render(&cols, &[ext4, tmp], &facts, Style::default());
        // The label is escaped as any other bytes are: no row splits. A
        // row's empty cells are padded, but the last, as findmnt pads them.
        assert_eq!(
            t,
            "TARGET UUID                                 LABEL\n\
             /data  5eed0e55-1111-4222-8333-444455556666 my\\x0alabel\n\
             /tmp                                        \n"
        );
        // Nothing is gathered for a table that does not show them.
        let called = std::cell::Cell::new(false);
        let f = Facts::gather(&Columns::parse("target").unwrap(), &[], || {
            called.set(true);
            HashMap::new()
        });
        assert!(!called.get() && f.fs.is_empty());
    }
}
