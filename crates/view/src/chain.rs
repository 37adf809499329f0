//! An error and its causes as one line, the way the CLI prints errors and
//! the listings show why a device could not be read.

/// An error and its causes, `: `-joined, as the CLI prints errors.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
