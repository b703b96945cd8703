//! softspin.h's `ss_event` and `ss_notification` carry every field of the
//! host API's events (`softspin_host::EVENTS`, generated from the types): a
//! field added in Rust fails here until the C API has it (and this map says
//! where).

use std::collections::{BTreeMap, BTreeSet};

use softspin_host::Output;

/// For each Rust field, the C fields that carry it.
type FieldMap = &'static [(&'static str, &'static [&'static str])];

/// Each Rust event kind: its SS_EVENT_* code, and where its fields go.
const C_EVENTS: &[(&str, &str, FieldMap)] = &[
    (
        "OutPacket",
        "SS_EVENT_OUTBOUND",
        &[
            ("ectx", &["ectx"]),
            ("time_ps", &["time_ps"]),
            ("dest", &["dest"]),
            ("frame", &["data", "data_len"]),
        ],
    ),
    (
        "HostWrite",
        "SS_EVENT_HOST_WRITE",
        &[
            ("ectx", &["ectx"]),
            ("time_ps", &["time_ps"]),
            ("addr", &["addr"]),
            ("value", &["value"]),
        ],
    ),
    (
        "MessageDone",
        "SS_EVENT_MESSAGE_DONE",
        &[
            ("ectx", &["ectx"]),
            ("time_ps", &["time_ps"]),
            ("msg_id", &["msg_id"]),
        ],
    ),
    (
        "HandlerError",
        "SS_EVENT_HANDLER_ERROR",
        &[
            ("ectx", &["ectx"]),
            ("ectx_name", &["ectx_name"]),
            ("msg_id", &["msg_id"]),
            ("handler", &["handler"]),
            // The cause as a code; an abort's status in `value`.
            ("kind", &["error_cause", "value"]),
            ("cause", &["cause"]),
            ("detail", &["detail"]),
            ("pc", &["pc", "present"]),
            ("addr", &["addr", "present"]),
            ("time_ns", &["time_ps"]),
            ("hpu", &["hpu", "present"]),
        ],
    ),
    (
        "ErrorsDropped",
        "SS_EVENT_ERRORS_DROPPED",
        &[("count", &["value"])],
    ),
];

/// `softspin_host::Notification`'s fields in `ss_notification`.
const C_NOTIFICATION: FieldMap = &[
    ("ectx", &["ectx"]),
    ("id", &["id"]),
    ("hpu", &["hpu"]),
    ("time_ps", &["time_ps"]),
    ("data", &["data", "data_len"]),
    ("host_ref", &["host_ref"]),
];

fn header() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/include/softspin.h");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The member names of `typedef struct NAME { ... } NAME;` in cbindgen's
/// layout (one member a line, comments in `/** */` blocks).
fn members(h: &str, name: &str) -> Vec<String> {
    let open = format!("typedef struct {name} {{");
    let start = h.find(&open).unwrap_or_else(|| panic!("no `{open}`")) + open.len();
    let end = start + h[start..].find(&format!("}} {name};")).expect("struct end");
    h[start..end]
        .lines()
        .map(str::trim)
        .filter(|l| l.ends_with(';') && !l.starts_with('*') && !l.starts_with("/*"))
        .map(|l| {
            let decl = l.trim_end_matches(';');
            let decl = decl.split('[').next().unwrap();
            let n = decl.rsplit([' ', '*']).next().unwrap();
            n.to_string()
        })
        .collect()
}

/// `#define NAME VALUE` lines with integer values.
fn defines(h: &str) -> BTreeMap<String, i64> {
    h.lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("#define ")?.split_whitespace();
            let (n, v) = (w.next()?, w.next()?);
            Some((n.to_string(), v.parse().ok()?))
        })
        .collect()
}

fn fields(m: &[(&str, &[&str])]) -> Vec<String> {
    m.iter().map(|(f, _)| f.to_string()).collect()
}

#[test]
fn parser_reads_the_header() {
    // Independent of the table: fields whose order the ABI fixes.
    let h = header();
    let ev = members(&h, "ss_event");
    assert_eq!(ev[..3], ["kind", "ectx", "time_ps"]);
    assert_eq!(ev.last().map(String::as_str), Some("ectx_name"));
    assert!(members(&h, "ss_notification").contains(&"data".to_string()));
    assert_eq!(defines(&h).get("SS_EVENT_NONE"), Some(&0));
}

#[test]
fn ss_event_carries_every_event_field() {
    let h = header();
    let c_fields: BTreeSet<String> = members(&h, "ss_event").into_iter().collect();
    let defs = defines(&h);
    let rust: Vec<(String, Vec<String>)> = softspin_host::EVENTS
        .iter()
        .map(|k| {
            (
                k.name.into(),
                k.fields.iter().map(|f| f.to_string()).collect(),
            )
        })
        .collect();
    let mapped: Vec<(String, Vec<String>)> = C_EVENTS
        .iter()
        .map(|(k, _, m)| (k.to_string(), fields(m)))
        .collect();
    assert_eq!(
        rust, mapped,
        "softspin_host::EVENTS (left) and ss_event's map (right) differ: give the C API the new field"
    );
    let mut used = BTreeSet::from(["kind".to_string()]);
    let mut codes = BTreeSet::from([defs["SS_EVENT_NONE"]]);
    for (kind, code, m) in C_EVENTS {
        let v = defs
            .get(*code)
            .unwrap_or_else(|| panic!("{kind}: softspin.h has no {code}"));
        assert!(codes.insert(*v), "{code} = {v} is used twice");
        for (f, cs) in *m {
            for c in *cs {
                assert!(c_fields.contains(*c), "{kind}.{f}: ss_event has no `{c}`");
                used.insert(c.to_string());
            }
        }
    }
    assert_eq!(used, c_fields, "ss_event fields no event kind uses");
}

#[test]
fn ss_notification_carries_every_field() {
    let h = header();
    let kind = softspin_host::Notification::KIND;
    let rust: Vec<String> = kind.fields.iter().map(|f| f.to_string()).collect();
    assert_eq!(
        rust,
        fields(C_NOTIFICATION),
        "give ss_notification the new field"
    );
    let c: BTreeSet<String> = members(&h, "ss_notification").into_iter().collect();
    let used: BTreeSet<String> = C_NOTIFICATION
        .iter()
        .flat_map(|(_, cs)| cs.iter().map(|c| c.to_string()))
        .collect();
    assert_eq!(used, c);
}
