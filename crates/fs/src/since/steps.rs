//! Paths through time: the directory moves of a window, and a path valid
//! at one record carried forward to the window's end or back to its start.
//!
//! A record's `path` is the entry's path as of that record. Between two
//! records an entry keeps its place (its directory and name) unless a
//! record of its own moves it; only its ancestors move, and every such move
//! is a RENME in the window. So a path known at record `i` is carried
//! forward by applying every later move whose old path is a prefix of it,
//! and back by undoing every earlier one whose new path is. A path names
//! one entry at any moment, so a prefix match is always a move of that
//! entry's ancestor (or of itself), never of another entry.

/// One namespace step of the window, at a record's index.
#[derive(Debug)]
pub(super) enum Step {
    /// Entries moved: each `(from, to)`, all at once (two for an exchange).
    Move(Vec<(Vec<u8>, Vec<u8>)>),
    /// An entry left the tree with everything below it (moved out).
    Gone(Vec<u8>),
}

/// The steps of a window, in log order.
#[derive(Debug, Default)]
pub(super) struct Steps {
    steps: Vec<(u64, Step)>,
}

/// `p` with its prefix `from` (a whole path component) replaced by `to`,
/// or `None` when `from` is not a prefix of it.
fn rebase(p: &[u8], from: &[u8], to: &[u8]) -> Option<Vec<u8>> {
    let rest = p.strip_prefix(from)?;
    if !rest.is_empty() && rest[0] != b'/' {
        return None;
    }
    let mut out = Vec::with_capacity(to.len() + rest.len());
    out.extend_from_slice(to);
    out.extend_from_slice(rest);
    Some(out)
}

/// Whether `p` is `q` or below it.
fn below(p: &[u8], q: &[u8]) -> bool {
    p.strip_prefix(q)
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

impl Steps {
    pub(super) fn push(&mut self, index: u64, step: Step) {
        self.steps.push((index, step));
    }

    /// Path `p`, valid at record `at` (and unchanged by that record's own
    /// step), as of the end of the window; `None` when it left the tree.
    /// `p` is taken and given back when no step moves it.
    pub(super) fn forward(&self, mut p: Vec<u8>, at: u64) -> Option<Vec<u8>> {
        let start = self.steps.partition_point(|(i, _)| *i <= at);
        for (_, step) in &self.steps[start..] {
            match step {
                Step::Move(pairs) => {
                    if let Some(q) = pairs.iter().find_map(|(f, t)| rebase(&p, f, t)) {
                        p = q;
                    }
                }
                Step::Gone(q) if below(&p, q) => return None,
                Step::Gone(_) => {}
            }
        }
        Some(p)
    }

    /// Path `p`, valid at record `at`, as of the start of the window.
    pub(super) fn backward(&self, mut p: Vec<u8>, at: u64) -> Vec<u8> {
        let end = self.steps.partition_point(|(i, _)| *i < at);
        for (_, step) in self.steps[..end].iter().rev() {
            if let Step::Move(pairs) = step
                && let Some(q) = pairs.iter().find_map(|(f, t)| rebase(&p, t, f))
            {
                p = q;
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_follows_its_ancestors_moves_both_ways() {
        let mut s = Steps::default();
        s.push(2, Step::Move(vec![(b"a".to_vec(), b"b".to_vec())]));
        s.push(
            4,
            Step::Move(vec![
                (b"b/c".to_vec(), b"x".to_vec()),
                (b"x".to_vec(), b"b/c".to_vec()),
            ]),
        );
        s.push(6, Step::Gone(b"x/d".to_vec()));
        let f = |p: &[u8], at| s.forward(p.to_vec(), at);
        let b = |p: &[u8], at| s.backward(p.to_vec(), at);
        assert_eq!(f(b"a/c/e", 1).as_deref(), Some(&b"x/e"[..]));
        assert_eq!(f(b"ab/c", 1).as_deref(), Some(&b"ab/c"[..]));
        assert_eq!(f(b"a/c/d/f", 1), None);
        assert_eq!(b(b"x/e", 5), b"a/c/e");
        assert_eq!(b(b"b", 2), b"b");
        assert_eq!(b(b"b/c/y", 7), b"x/y");
    }
}
