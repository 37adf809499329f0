//! Loading the fixture sets of `tests/fixtures` (see make.sh there): each
//! PV image is gunzipped into a `Vec<u8>`, which is a `ReadAt`.

use std::fs;
use std::io::Read;
use std::path::PathBuf;

/// Every set make.sh writes.
pub(crate) const SETS: [&str; 7] = [
    "many",
    "mdacopies",
    "vgcopies",
    "several",
    "missing",
    "dup",
    "wrap",
];

/// One PV image.
pub(crate) struct Image {
    /// Its name in the set (the file name without `.img.gz`), which is also
    /// its `pv_name` in the set's pvs.json.
    pub(crate) name: String,
    /// The whole device.
    pub(crate) bytes: Vec<u8>,
}

/// The folder of a set.
pub(crate) fn dir(set: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(set)
}

/// One image of a set.
pub(crate) fn image(set: &str, name: &str) -> Vec<u8> {
    let path = dir(set).join(format!("{name}.img.gz"));
    let file = fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes
}

/// All images of a set, by name.
pub(crate) fn images(set: &str) -> Vec<Image> {
    let mut names: Vec<String> = fs::read_dir(dir(set))
        .unwrap_or_else(|e| panic!("{set}: {e}"))
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some(name.strip_suffix(".img.gz")?.to_owned())
        })
        .collect();
    names.sort();
    assert!(!names.is_empty(), "set {set} has no images");
    names
        .into_iter()
        .map(|name| Image {
            bytes: image(set, &name),
            name,
        })
        .collect()
}

/// The words of the set's notes.txt line starting with `key`.
pub(crate) fn note(set: &str, key: &str) -> Vec<String> {
    let text = fs::read_to_string(dir(set).join("notes.txt")).expect("notes.txt");
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(key))
        .unwrap_or_else(|| panic!("{set}/notes.txt has no {key} line"));
    line.split_whitespace().skip(1).map(str::to_owned).collect()
}
