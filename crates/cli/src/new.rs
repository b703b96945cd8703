//! `softspin new NAME [--live]`: a directory holding a first handler that
//! works as written (docs/first-handler.md walks through it): a payload
//! handler answering UDP datagrams with their text in upper case, a
//! Makefile, a test pcap and a Python check that runs `softspin sim` on the
//! pcap and compares every reply byte with its own computation; `--live`
//! adds a script running the same check against the live NIC between two
//! network namespaces (scripts/netns.sh).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use softspin_engine::traffic::{build_frame, write_pcap, FrameKind};

/// The UDP port the handler answers on, in every generated file.
const PORT: u16 = 9000;

/// The datagrams of the test pcap: what a newcomer would send first.
const REQUESTS: [&str; 3] = ["hello spin", "Handlers run on the NIC!", "x"];

#[derive(clap::Args)]
pub struct NewArgs {
    /// Directory to create; its last component names the handler (a C
    /// identifier: letters, digits, `_`).
    name: PathBuf,
    /// Also write live.sh: the check against the live NIC in network
    /// namespaces (root; scripts/netns.sh, prefix $SS_NS_PREFIX).
    #[arg(long)]
    live: bool,
}

pub fn main(a: NewArgs) -> anyhow::Result<ExitCode> {
    let dir = &a.name;
    let ident = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    if !is_c_ident(&ident) {
        bail!(
            "`{}`: the directory's name becomes the handler's C name ({ident}_ph), so it must be a C identifier (letters, digits, _; not starting with a digit)",
            dir.display()
        );
    }
    if dir.exists() {
        bail!(
            "{} already exists: softspin new writes a new directory and never overwrites one (pick another name or remove it)",
            dir.display()
        );
    }
    // The parent must exist: a typo in it should not create a tree.
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(p) = parent {
        if !p.is_dir() {
            bail!("{}: no such directory", p.display());
        }
    }
    std::fs::create_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    let write = |file: &str, text: &str| -> anyhow::Result<()> {
        let p = dir.join(file);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    write("handler.c", &handler_c(&ident))?;
    write("Makefile", &makefile(&ident))?;
    write("check.py", &check_py(&ident))?;
    write_test_pcap(&dir.join("test.pcap"))?;
    if a.live {
        let root = crate::build::sdk_dir()?.join("..");
        let root = root.canonicalize().unwrap_or(root);
        let p = dir.join("live.sh");
        std::fs::write(&p, live_sh(&ident, &root))
            .with_context(|| format!("writing {}", p.display()))?;
        set_executable(&p)?;
    }
    println!(
        "wrote {d}/: handler.c Makefile test.pcap check.py{} -- next: make -C {d} check",
        if a.live { " live.sh" } else { "" },
        d = dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn is_c_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

#[cfg(unix)]
fn set_executable(p: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("chmod {}", p.display()))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> anyhow::Result<()> {
    Ok(())
}

/// Ethernet/IPv4/UDP frames to port [`PORT`], one request each, 1 µs apart.
fn write_test_pcap(p: &Path) -> anyhow::Result<()> {
    let eth = FrameKind::Eth;
    let mut frames = Vec::new();
    for (k, text) in REQUESTS.iter().enumerate() {
        let t = text.as_bytes();
        let f = build_frame(
            eth,
            eth.header_len() + t.len(),
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            40000 + k as u16,
            PORT,
            |i| t[i],
        )?;
        frames.push((k as u64 * 1_000_000, f));
    }
    write_pcap(p, eth, &frames)?;
    Ok(())
}

fn handler_c(name: &str) -> String {
    format!(
        r#"/*
 * {name}: a payload handler that answers each UDP datagram with its text in
 * upper case, from the NIC (docs/first-handler.md explains every line).
 *
 * Built for the fpspin profile (see Makefile): its handlers get Ethernet
 * frames, as the live NIC receives them; `softspin sim` reads the profile
 * from the image, so sim and nic agree without flags.
 */
#include <spin.h>

#define REPLIES 0 /* counter index: one sample per reply, value: its bytes */

__handler__ void {name}_ph(handler_args_t *args)
{{
    uint8_t *p = (uint8_t *)args->task->pkt_mem; /* this packet, in L1 */
    uint32_t len = args->task->pkt_mem_size;
    if (len < sizeof(eth_hdr_t) + sizeof(ipv4_hdr_t) + sizeof(udp_wire_hdr_t))
        return;
    eth_hdr_t *eth = (eth_hdr_t *)p;
    ipv4_hdr_t *ip = (ipv4_hdr_t *)(p + sizeof(eth_hdr_t));
    uint32_t hlen = IPV4_HDR_LEN(ip);
    if (ntohs(eth->ethertype) != ETHERTYPE_IPV4 || IPV4_VERSION(ip) != 4 ||
        ip->protocol != IP_PROTO_UDP || hlen < sizeof(ipv4_hdr_t) ||
        len < sizeof(eth_hdr_t) + hlen + sizeof(udp_wire_hdr_t))
        return; /* not ours: no reply */
    udp_wire_hdr_t *udp = (udp_wire_hdr_t *)((uint8_t *)ip + hlen);
    /* The UDP length says where the datagram ends (frames may be padded). */
    uint32_t ulen = ntohs(udp->length);
    if (ulen < sizeof(udp_wire_hdr_t) || sizeof(eth_hdr_t) + hlen + ulen > len)
        return;

    /* The reply is built in place: swap addresses and ports (the IPv4
     * header checksum stays valid, the swap only reorders its words) ... */
    for (int i = 0; i < ETH_ALEN; i++) {{
        uint8_t t = eth->dest.data[i];
        eth->dest.data[i] = eth->src.data[i];
        eth->src.data[i] = t;
    }}
    uint32_t a = ip->saddr;
    ip->saddr = ip->daddr;
    ip->daddr = a;
    uint16_t port = udp->src_port;
    udp->src_port = udp->dst_port;
    udp->dst_port = port;
    /* ... change the text, and with it the UDP checksum: 0 means "none"
     * in IPv4 (RFC 768), so no sum over the payload is needed. */
    uint8_t *text = (uint8_t *)(udp + 1);
    for (uint32_t i = 0; i < ulen - sizeof(udp_wire_hdr_t); i++)
        if (text[i] >= 'a' && text[i] <= 'z')
            text[i] -= 'a' - 'A';
    udp->checksum = 0;

    /* The command unit copies the frame when the call is made: the buffer
     * may be reused at once, no wait needed. */
    spin_send_packet(p, len, NULL);
    spin_push_counter(REPLIES, len);
}}
"#
    )
}

fn makefile(name: &str) -> String {
    format!(
        r#"# {name}: build the handler image and check it (softspin new).
# Standalone (make check) or included from another Makefile.
{name}_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
SOFTSPIN ?= softspin

# --profile fpspin: the memory map and cluster count of FPsPIN's NIC and
# Ethernet frames; the image records it, so `softspin sim` needs no flags.
$({name}_DIR)/{name}.elf: $({name}_DIR)/handler.c
	$(SOFTSPIN) build --profile fpspin $< -o $@

.PHONY: check
check: $({name}_DIR)/{name}.elf
	SOFTSPIN=$(SOFTSPIN) python3 $({name}_DIR)/check.py
"#
    )
}

fn check_py(name: &str) -> String {
    format!(
        r#"#!/usr/bin/env python3
"""Check {name}_ph: run `softspin sim` on test.pcap and compare every reply
byte with a reply computed here (addresses and ports swapped, text in upper
case, UDP checksum 0). Exit status 0 only if all match.

    python3 check.py                 # simulated NIC, test.pcap
    python3 check.py --live IP       # send the same datagrams to a live NIC at IP
"""
import os, socket, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOFTSPIN = os.environ.get("SOFTSPIN", "softspin")
IMAGE = os.path.join(HERE, "{name}.elf")
PORT = {PORT}


def read_pcap(path):
    """Frames of a classic pcap file (what softspin writes)."""
    data = open(path, "rb").read()
    magic = struct.unpack_from("<I", data)[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    frames, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack_from(end + "I", data, off + 8)[0]
        frames.append(data[off + 16 : off + 16 + incl])
        off += 16 + incl
    return frames


def expected_reply(req):
    """The reply to one Ethernet/IPv4/UDP request, computed independently."""
    hlen = (req[14] & 15) * 4
    u = 14 + hlen
    ulen = struct.unpack_from("!H", req, u + 4)[0]
    r = bytearray(req)
    r[0:6], r[6:12] = req[6:12], req[0:6]
    r[26:30], r[30:34] = req[30:34], req[26:30]
    r[u : u + 2], r[u + 2 : u + 4] = req[u + 2 : u + 4], req[u : u + 2]
    r[u + 6 : u + 8] = b"\0\0"
    r[u + 8 : u + ulen] = req[u + 8 : u + ulen].upper()
    return bytes(r)


def check_sim():
    reqs = read_pcap(os.path.join(HERE, "test.pcap"))
    with tempfile.TemporaryDirectory() as t:
        out = os.path.join(t, "out.pcap")
        # No --profile or --frame: the image says it was built for fpspin.
        r = subprocess.run([SOFTSPIN, "sim", "--image", IMAGE, "--ph", "{name}_ph",
                            "--pcap", os.path.join(HERE, "test.pcap"), "--pcap-out", out, "--quiet"],
                           capture_output=True, text=True)
        print(r.stdout, end="")
        if r.returncode != 0:
            sys.exit(f"softspin sim failed (exit {{r.returncode}}): {{r.stderr}}")
        replies = read_pcap(out)
    if len(replies) != len(reqs):
        sys.exit(f"{{len(replies)}} replies to {{len(reqs)}} requests")
    # Requests run on several HPUs at once: a short one may be answered
    # first. So each reply must be the expected reply of a request not yet
    # answered (the requests differ in source port, so their replies differ).
    want = {{expected_reply(q): k for k, q in enumerate(reqs)}}
    for a in replies:
        if a not in want:
            sys.exit(f"unexpected reply {{a.hex()}}; expected one of:\n" + "\n".join(w.hex() for w in want))
        del want[a]
    print(f"ok: {{len(replies)}} replies, every byte as expected")


def check_live(ip):
    reqs = read_pcap(os.path.join(HERE, "test.pcap"))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2.0)
    for q in reqs:
        hlen = (q[14] & 15) * 4
        text = q[14 + hlen + 8 :]
        s.sendto(text, (ip, PORT))
        got, _ = s.recvfrom(2048)
        if got != text.upper():
            sys.exit(f"live reply {{got!r}} to {{text!r}}")
    print(f"ok: {{len(reqs)}} live replies from {{ip}}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--live":
        check_live(sys.argv[2])
    elif len(sys.argv) == 1:
        check_sim()
    else:
        sys.exit(__doc__)
"#
    )
}

fn live_sh(name: &str, root: &Path) -> String {
    format!(
        r#"#!/usr/bin/env bash
# {name} on the live NIC (root): two network namespaces joined by a veth
# pair (scripts/netns.sh; names start with $SS_NS_PREFIX), the NIC on one
# end running {name}_ph for UDP port {PORT}, check.py --live on the other.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
SOFTSPIN_ROOT="${{SOFTSPIN_ROOT:-{root}}}"
SOFTSPIN="${{SOFTSPIN:-softspin}}"
NETNS="$SOFTSPIN_ROOT/scripts/netns.sh"
export SS_NS_PREFIX="${{SS_NS_PREFIX:-ssnew}}"
make -s -C "$HERE" SOFTSPIN="$SOFTSPIN" {name}.elf
trap '"$NETNS" down' EXIT
eval "$("$NETNS" up)"   # NIC_NS, NIC_IF, NIC_IP, PEER_NS, ...
# No --profile: nic's default, fpspin, is what the image was built for.
ip netns exec "$NIC_NS" "$SOFTSPIN" nic --iface "$NIC_IF" --image "$HERE/{name}.elf" \
    --ph {name}_ph --match udp:{PORT} --duration 6 &
nic=$!
sleep 2
ip netns exec "$PEER_NS" python3 "$HERE/check.py" --live "$NIC_IP"
wait "$nic"
"#,
        root = root.display()
    )
}
