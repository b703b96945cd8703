//! docs/first-handler.md is tested (issue 26 item 6): its ```sh
//! first-handler``` blocks run, in order, as one bash script in an empty
//! directory with this softspin first on PATH; the ```sh
//! first-handler-live``` blocks join them as root only, in namespaces
//! prefixed `sgud`. A newcomer following only the page succeeds.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bodies of the fenced blocks whose info string is exactly `info`.
fn blocks(md: &str, info: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in md.lines() {
        match &mut cur {
            None if line.trim_start().strip_prefix("```") == Some(info) => {
                cur = Some(String::new())
            }
            Some(b) if line.trim_start() == "```" => {
                out.push(std::mem::take(b));
                cur = None;
            }
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
            None => {}
        }
    }
    assert!(cur.is_none(), "unterminated `{info}` block");
    out
}

fn is_root() -> bool {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0")
}

#[test]
fn the_block_reader_keeps_order_and_skips_other_blocks() {
    let md = "a\n```sh first-handler\nx\n```\n```sh\nnot me\n```\n```sh first-handler\ny\nz\n```\n";
    assert_eq!(blocks(md, "sh first-handler"), ["x\n", "y\nz\n"]);
    assert!(blocks(md, "sh first-handler-live").is_empty());
}

#[test]
fn the_first_handler_page_runs_as_written() {
    let md = std::fs::read_to_string(root().join("docs/first-handler.md")).unwrap();
    let mut script = String::from("set -euo pipefail\n");
    let steps = blocks(&md, "sh first-handler");
    assert!(steps.len() >= 3, "the page lost its command blocks");
    for b in &steps {
        script.push_str(b);
    }
    let live = blocks(&md, "sh first-handler-live");
    assert!(!live.is_empty(), "the page lost its live block");
    if is_root() {
        for b in &live {
            script.push_str(b);
        }
    } else {
        println!("SKIPPED: the page's live block needs root (network namespaces, XDP)");
    }
    let dir = std::env::temp_dir().join(format!("softspin-first-handler-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_softspin")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&dir)
        .env("PATH", path)
        .env("SS_NS_PREFIX", "sgud")
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.status.success(),
        "the page's commands failed:\n{script}\n---\n{out}"
    );
    assert!(out.contains("ok: 3 replies"), "{out}");
    if is_root() {
        assert!(out.contains("ok: 3 live replies"), "{out}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
