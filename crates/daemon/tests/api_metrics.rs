//! `/metrics` parsed as Prometheus text (0.0.4): every family declared
//! once with HELP and TYPE, samples well-formed and under their family,
//! the commit and durable latency histograms cumulative with `+Inf` equal
//! to `_count` and counting every record, the mount tracker's budget
//! state and the filesystem tracker's families, a sample per root (with
//! real trackers, as root).

mod api_support;

use std::collections::BTreeMap;
use std::time::Instant;

use api_support::{Trackers, as_root, fixture, is_root, plain};
use weir_daemon::api::{Access, Limits};

/// One sample line.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// A family: its TYPE and its samples, in order.
#[derive(Debug, Default)]
struct Family {
    kind: String,
    samples: Vec<Sample>,
}

fn valid_name(n: &str) -> bool {
    let mut c = n.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

/// `k="v",...` (the part between the braces), with the format's escapes.
fn parse_labels(s: &str, line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let (k, after) = rest
            .split_once("=\"")
            .unwrap_or_else(|| panic!("label: {line}"));
        assert!(valid_name(k), "label name {k:?}: {line}");
        let mut v = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => v.push('\n'),
                    Some((_, c @ ('\\' | '"'))) => v.push(c),
                    _ => panic!("bad escape: {line}"),
                },
                Some((i, '"')) => break i,
                Some((_, c)) => v.push(c),
                None => panic!("unterminated label value: {line}"),
            }
        };
        out.push((k.to_owned(), v));
        rest = &after[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    out
}

fn parse_value(v: &str, line: &str) -> f64 {
    match v {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().unwrap_or_else(|_| panic!("value {v:?}: {line}")),
    }
}

/// Parses the exposition, asserting its rules as it goes.
fn parse(text: &str) -> BTreeMap<String, Family> {
    let mut fams: BTreeMap<String, Family> = BTreeMap::new();
    let mut help: Option<String> = None;
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("# HELP ") {
            let (name, text) = h.split_once(' ').unwrap_or_else(|| panic!("{line}"));
            assert!(!text.is_empty(), "empty help: {line}");
            help = Some(name.to_owned());
        } else if let Some(t) = line.strip_prefix("# TYPE ") {
            let (name, kind) = t.split_once(' ').unwrap_or_else(|| panic!("{line}"));
            assert!(valid_name(name), "{line}");
            assert_eq!(
                help.take().as_deref(),
                Some(name),
                "TYPE without HELP: {line}"
            );
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            assert!(!fams.contains_key(name), "family declared twice: {line}");
            fams.insert(
                name.to_owned(),
                Family {
                    kind: kind.to_owned(),
                    samples: Vec::new(),
                },
            );
            current = Some(name.to_owned());
        } else {
            assert!(!line.starts_with('#'), "unknown comment: {line}");
            let fam = current
                .as_deref()
                .unwrap_or_else(|| panic!("no family: {line}"));
            let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, parse_labels(l.strip_suffix('}').expect("}"), line)),
                None => (series, Vec::new()),
            };
            let f = fams.get_mut(fam).unwrap();
            let own = name == fam
                || (f.kind == "histogram"
                    && ["_bucket", "_sum", "_count"]
                        .iter()
                        .any(|s| name.strip_suffix(s) == Some(fam)));
            assert!(own, "sample outside its family {fam}: {line}");
            let value = parse_value(value, line);
            if f.kind == "counter" {
                assert!(name.ends_with("_total"), "{line}");
                assert!(value >= 0.0, "{line}");
            }
            f.samples.push(Sample {
                name: name.to_owned(),
                labels,
                value,
            });
        }
    }
    fams
}

/// A histogram's cumulative buckets (le, count), its sum and its count,
/// after checking it: `le` rising to `+Inf`, counts never falling, `+Inf`
/// equal to `_count`.
fn histogram(fams: &BTreeMap<String, Family>, name: &str) -> (Vec<(f64, f64)>, f64, f64) {
    let f = fams.get(name).unwrap_or_else(|| panic!("{name} missing"));
    assert_eq!(f.kind, "histogram");
    let mut buckets = Vec::new();
    let (mut sum, mut count) = (None, None);
    for s in &f.samples {
        if s.name.ends_with("_bucket") {
            assert!(sum.is_none() && count.is_none(), "bucket after _sum/_count");
            let [(k, le)] = s.labels.as_slice() else {
                panic!("{s:?}")
            };
            assert_eq!(k, "le");
            buckets.push((parse_value(le, le), s.value));
        } else if s.name.ends_with("_sum") {
            sum = Some(s.value);
        } else {
            count = Some(s.value);
        }
    }
    let (sum, count) = (sum.expect("_sum"), count.expect("_count"));
    assert!(
        buckets.windows(2).all(|w| w[0].0 < w[1].0),
        "le not rising: {buckets:?}"
    );
    assert!(
        buckets.windows(2).all(|w| w[0].1 <= w[1].1),
        "not cumulative: {buckets:?}"
    );
    let last = buckets.last().expect("no buckets");
    assert_eq!(last.0, f64::INFINITY, "does not end with +Inf");
    assert_eq!(last.1, count, "+Inf != _count");
    assert!(sum >= 0.0);
    (buckets, sum, count)
}

fn value(fams: &BTreeMap<String, Family>, name: &str) -> f64 {
    let f = fams.get(name).unwrap_or_else(|| panic!("{name} missing"));
    let [s] = f.samples.as_slice() else {
        panic!("{f:?}")
    };
    s.value
}

#[tokio::test]
async fn latency_histograms_are_cumulative_and_count_every_record() {
    let fx_started = Instant::now();
    let fx = plain();
    let router = weir_daemon::api::router(fx.state.clone());
    let fams = parse(as_root(&router, "GET", "/metrics", "").await.text());
    for name in ["weir_log_commit_seconds", "weir_log_durable_seconds"] {
        let (buckets, sum, count) = histogram(&fams, name);
        assert_eq!(buckets.len(), 17, "{buckets:?}");
        assert_eq!((buckets[0].0, buckets[15].0), (0.000001, 30.0));
        assert_eq!((sum, count), (0.0, 0.0), "{name} before any record");
    }
    // Without the mount tracker there is no budget to show.
    assert!(!fams.contains_key("weir_mounts_budget_throttled"));

    let start = Instant::now();
    let a = as_root(
        &router,
        "POST",
        "/v1/log/records",
        r#"{"records":[{"type":"MARK","name":"a"},{"type":"MARK","name":"b"},{"type":"MARK","name":"c"}],"durable":true}"#,
    )
    .await;
    assert_eq!(a.json(), serde_json::json!({"indexes": [1, 2, 3]}));
    api_support::append_marks(&fx.state.log, 4);
    fx.state.log.sync().unwrap();
    let waited = start.elapsed().as_secs_f64();
    let text = as_root(&router, "GET", "/metrics", "").await;
    let fams = parse(text.text());
    assert_eq!(value(&fams, "weir_log_last_index"), 7.0);
    let (commit, commit_sum, n) = histogram(&fams, "weir_log_commit_seconds");
    assert_eq!(n, 7.0, "{}", text.text());
    // No record waited longer than the test did.
    assert!(
        commit_sum > 0.0 && commit_sum <= 7.0 * waited,
        "{commit_sum}"
    );
    let within = commit.iter().find(|(le, _)| *le >= waited).unwrap();
    assert_eq!(within.1, 7.0, "{commit:?}");
    let (_, durable_sum, n) = histogram(&fams, "weir_log_durable_seconds");
    assert_eq!(n, 7.0);
    assert!(durable_sum >= commit_sum && durable_sum <= 7.0 * waited);
    // The commit thread's CPU time, where /proc has it: some, and no more
    // than the test's wall time (it is one thread).
    if std::path::Path::new("/proc/self/schedstat").exists() {
        let cpu = value(&fams, "weir_log_committer_cpu_seconds_total");
        let lived = fx_started.elapsed().as_secs_f64();
        assert!(cpu > 0.0 && cpu <= lived, "{cpu} s in {lived} s");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_state_is_shown_with_the_mount_tracker() {
    if !is_root() {
        eprintln!("skipping the budget metrics: the real trackers need root");
        return;
    }
    let fx = fixture(Access::default(), Limits::default(), Trackers::Real);
    let router = weir_daemon::api::router(fx.state.clone());
    let fams = parse(as_root(&router, "GET", "/metrics", "").await.text());
    let cap = value(&fams, "weir_mounts_budget_capacity_seconds");
    assert_eq!(cap, 0.02);
    let tokens = value(&fams, "weir_mounts_budget_tokens_seconds");
    // A fresh tracker has spent at most its first reading.
    assert!(tokens <= cap && tokens > -cap, "{tokens}");
    assert_eq!(fams["weir_mounts_budget_tokens_seconds"].kind, "gauge");
    let throttled = value(&fams, "weir_mounts_budget_throttled");
    assert!(throttled == 0.0 || throttled == 1.0, "{throttled}");
    assert_eq!(fams["weir_mounts_readings_deferred_total"].kind, "counter");
    assert!(value(&fams, "weir_mounts_readings_deferred_total") >= 0.0);
    let events = &fams["weir_source_events_total"];
    let sources: Vec<&str> = events
        .samples
        .iter()
        .map(|s| s.labels[0].1.as_str())
        .collect();
    assert_eq!(sources, ["mounts", "devices", "fs"]);
    assert_eq!(fams["weir_devices_writes_total"].kind, "counter");
    assert_eq!(fams["weir_devices_unwatched"].kind, "gauge");
    assert!(value(&fams, "weir_devices_watched") >= 0.0);
    histogram(&fams, "weir_log_commit_seconds");
    // The filesystem tracker: its counters, and each family per root has
    // one sample, labelled with the root's path.
    assert_eq!(value(&fams, "weir_fs_roots"), 1.0);
    assert_eq!(fams["weir_fs_events_total"].kind, "counter");
    assert_eq!(fams["weir_fs_overflows_total"].kind, "counter");
    assert_eq!(fams["weir_fs_backlog_events"].kind, "gauge");
    assert!(value(&fams, "weir_fs_backlog_events") >= 0.0);
    let root = std::fs::canonicalize(fx.tree.as_ref().unwrap().path()).unwrap();
    for name in [
        "weir_fs_root_events_total",
        "weir_fs_root_records_total",
        "weir_fs_root_verified_total",
        "weir_fs_root_entries",
        "weir_fs_root_reading",
    ] {
        let f = &fams[name];
        assert_eq!(f.samples.len(), 1, "{name}");
        assert_eq!(
            f.samples[0].labels,
            [("root".to_owned(), root.to_str().unwrap().to_owned())],
            "{name}"
        );
    }
    // sub and sub/a.
    assert_eq!(fams["weir_fs_root_entries"].samples[0].value, 2.0);
    assert_eq!(fams["weir_fs_root_entries"].kind, "gauge");
    // Two entries are read within the start's budget: no work under way,
    // so the progress families are there, without a sample.
    assert_eq!(fams["weir_fs_root_reading"].samples[0].value, 0.0);
    for name in ["weir_fs_root_progress_done", "weir_fs_root_progress_total"] {
        assert_eq!(fams[name].kind, "gauge", "{name}");
        assert!(fams[name].samples.is_empty(), "{name}");
    }
}

#[tokio::test]
async fn without_watched_trees_there_are_no_fs_families() {
    let fx = api_support::plain();
    let router = weir_daemon::api::router(fx.state.clone());
    let fams = parse(as_root(&router, "GET", "/metrics", "").await.text());
    assert!(
        !fams.keys().any(|k| k.starts_with("weir_fs_")),
        "{:?}",
        fams.keys().collect::<Vec<_>>()
    );
    assert!(fams["weir_source_events_total"].samples.is_empty());
}

#[test]
fn the_checker_rejects_what_the_format_forbids() {
    let ok = "# HELP h_seconds H.\n# TYPE h_seconds histogram\n\
              h_seconds_bucket{le=\"1\"} 1\nh_seconds_bucket{le=\"+Inf\"} 2\n\
              h_seconds_sum 0.5\nh_seconds_count 2\n";
    let (b, _, n) = histogram(&parse(ok), "h_seconds");
    assert_eq!((b.len(), n), (2, 2.0));
    let bad = [
        // Not cumulative.
        ok.replace("le=\"1\"} 1", "le=\"1\"} 3"),
        // +Inf and _count disagree.
        ok.replace("_count 2", "_count 3"),
        // No +Inf bucket.
        ok.replace("h_seconds_bucket{le=\"+Inf\"} 2\n", ""),
        // A sample outside its family.
        ok.replace("h_seconds_sum", "other_sum"),
        // TYPE without HELP.
        ok.replace("# HELP h_seconds H.\n", ""),
    ];
    for text in bad {
        let r = std::panic::catch_unwind(|| histogram(&parse(&text), "h_seconds"));
        assert!(r.is_err(), "accepted:\n{text}");
    }
}
