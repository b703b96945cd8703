//! The C header sdk/include/softspin_abi.h is the source of truth for the
//! guest ABI; this checks that crates/hpu/src/abi.rs mirrors every value,
//! that the Rust `task_t`/`handler_args_t` layout and encoder agree with
//! clang's view of sdk/include/handler.h, and that the linker script takes
//! the memory map from its symbols only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSection, ObjectSymbol};
use softspin_hpu::abi::{self, HandlerArgs, MemoryMap, TaskDescriptor, TaskLayout};
use softspin_sdk::{build, sdk_dir, BuildOptions, Toolchain};

fn header() -> HashMap<String, i64> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sdk/include/softspin_abi.h"
    );
    let text = std::fs::read_to_string(path).expect("read softspin_abi.h");
    let mut m = HashMap::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if w.next() != Some("#define") {
            continue;
        }
        let (Some(name), Some(val)) = (w.next(), w.next()) else {
            continue;
        };
        let v = val
            .trim_start_matches('(')
            .trim_end_matches(')')
            .trim_end_matches(['u', 'l']);
        let parsed = if let Some(h) = v.strip_prefix("0x") {
            i64::from_str_radix(h, 16)
        } else {
            v.parse()
        };
        if let Ok(x) = parsed {
            m.insert(name.to_string(), x);
        }
    }
    m
}

#[test]
fn rust_abi_matches_the_c_header() {
    let h = header();
    let want: &[(&str, i64)] = &[
        ("SOFTSPIN_L1_BASE", abi::L1_BASE as i64),
        ("SOFTSPIN_L1_CLUSTER_STRIDE", abi::L1_CLUSTER_STRIDE as i64),
        ("SOFTSPIN_L2_HANDLER_BASE", abi::L2_HANDLER_BASE as i64),
        ("SOFTSPIN_L2_PKT_BASE", abi::L2_PKT_BASE as i64),
        ("SOFTSPIN_PROG_MEM_BASE", abi::PROG_MEM_BASE as i64),
        ("SOFTSPIN_HOST_WINDOW_BASE", abi::HOST_WINDOW_BASE as i64),
        (
            "SOFTSPIN_HOST_WINDOW_STRIDE",
            abi::HOST_WINDOW_STRIDE as i64,
        ),
        ("SOFTSPIN_NODE_TABLE_BASE", abi::NODE_TABLE_BASE as i64),
        ("SOFTSPIN_MAX_NODES", abi::MAX_NODES as i64),
        ("SOFTSPIN_SYS_WRITE", abi::sys::WRITE as i64),
        ("SOFTSPIN_SYS_EXIT", abi::sys::EXIT as i64),
        ("SOFTSPIN_SYS_DMA", abi::sys::DMA as i64),
        ("SOFTSPIN_SYS_SEND_PACKET", abi::sys::SEND_PACKET as i64),
        ("SOFTSPIN_SYS_RDMA_PUT", abi::sys::RDMA_PUT as i64),
        ("SOFTSPIN_SYS_DMA_TO_HOST", abi::sys::DMA_TO_HOST as i64),
        ("SOFTSPIN_SYS_DMA_FROM_HOST", abi::sys::DMA_FROM_HOST as i64),
        ("SOFTSPIN_SYS_WRITE_TO_HOST", abi::sys::WRITE_TO_HOST as i64),
        ("SOFTSPIN_SYS_CMD_WAIT", abi::sys::CMD_WAIT as i64),
        ("SOFTSPIN_SYS_CMD_TEST", abi::sys::CMD_TEST as i64),
        ("SOFTSPIN_SYS_PUSH_COUNTER", abi::sys::PUSH_COUNTER as i64),
        ("SOFTSPIN_SYS_NOTIFY_POST", abi::sys::NOTIFY_POST as i64),
        ("SOFTSPIN_SYS_NOTIFY_WAIT", abi::sys::NOTIFY_WAIT as i64),
        ("SOFTSPIN_SYS_NOTIFY_TEST", abi::sys::NOTIFY_TEST as i64),
        ("SPIN_ERR_INVAL", abi::err::INVAL as i64),
        ("SPIN_ERR_ACCESS", abi::err::ACCESS as i64),
        ("SPIN_ERR_NOSYS", abi::err::NOSYS as i64),
        ("SPIN_ERR_BUSY", abi::err::BUSY as i64),
        ("SPIN_ERR_NOENT", abi::err::NOENT as i64),
    ];
    for (name, v) in want {
        assert_eq!(h.get(*name), Some(v), "{name}");
    }
    let services = h.keys().filter(|k| k.starts_with("SOFTSPIN_SYS_")).count();
    assert_eq!(
        services,
        want.iter()
            .filter(|(n, _)| n.starts_with("SOFTSPIN_SYS_"))
            .count(),
        "a service was added to the header but not to abi.rs"
    );
}

fn scratch_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("softspin-abi-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// clang-19 with the SDK's flags (sdk/toolchain.txt) for `NB_CLUSTERS`.
fn clang(clusters: u32) -> Command {
    let sdk = sdk_dir().unwrap();
    let tc = Toolchain::load(&sdk).unwrap();
    let mut c = Command::new(&tc.cc);
    c.args(&tc.cflags).arg(format!("-DNB_CLUSTERS={clusters}"));
    c
}

/// Cluster counts to check: both profiles' (PsPIN 4, FPsPIN 2) and the
/// extremes the configuration allows.
const CLUSTER_COUNTS: [u32; 4] = [1, 2, 4, abi::MAX_CLUSTERS];

#[test]
fn task_layout_matches_clang_offsetof_and_sizeof() {
    let dir = scratch_dir("layout");
    for n in CLUSTER_COUNTS {
        let l = TaskLayout::new(n);
        let mut c = String::from("#include <handler.h>\n#include <stddef.h>\n");
        let mut check = |expr: String, v: u32| {
            c += &format!("_Static_assert({expr} == {v}, \"{expr} is not {v} (Rust)\");\n")
        };
        check("sizeof(task_t)".into(), l.size());
        for (f, off) in l.fields() {
            check(format!("offsetof(task_t, {f})"), off);
        }
        check("sizeof(((task_t *)0)->scratchpad)".into(), 4 * n);
        check("sizeof(((task_t *)0)->scratchpad_size)".into(), 4 * n);
        check("sizeof(handler_args_t)".into(), HandlerArgs::SIZE);
        for (f, off) in HandlerArgs::FIELDS {
            check(format!("offsetof(handler_args_t, {f})"), off);
        }
        let src = dir.join(format!("layout{n}.c"));
        std::fs::write(&src, &c).unwrap();
        let out = clang(n)
            .arg("-fsyntax-only")
            .arg(&src)
            .output()
            .expect("run clang-19");
        assert!(
            out.status.success(),
            "NB_CLUSTERS={n}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The bytes `TaskDescriptor::encode` writes equal those clang emits for a
/// `task_t` initialised with the same values (every field distinct).
#[test]
fn task_descriptor_encodes_as_clang_lays_out_task_t() {
    let dir = scratch_dir("encode");
    for n in CLUSTER_COUNTS {
        let mut d = TaskDescriptor {
            handler_mem: 0x1C00_0100,
            handler_mem_size: 0x1111,
            pkt_mem: 0x1000_0040,
            pkt_mem_size: 0x2222,
            host_mem: 0x7F01_2345_6789,
            host_mem_size: 0x3333,
            l2_pkt_mem: 0x1C40_0800,
            home_cluster_id: 0x44,
            flow_id: 0x5555_AAAA,
            ..Default::default()
        };
        for k in 0..n as usize {
            d.scratchpad[k] = (0x1010_0000 + k as u32 * 0x10, 0x6600 + k as u32);
        }
        let list = |f: &dyn Fn(usize) -> u32| {
            (0..n as usize)
                .map(|k| format!("{:#x}", f(k)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let src = format!(
            "#include <handler.h>\n\
             __attribute__((used)) const task_t ref_task = {{\n\
             .handler_mem = (void *){:#x}, .handler_mem_size = {:#x},\n\
             .pkt_mem = (void *){:#x}, .pkt_mem_size = {:#x},\n\
             .scratchpad = {{ {} }}, .scratchpad_size = {{ {} }},\n\
             .host_mem_high = {:#x}, .host_mem_low = {:#x}, .host_mem_size = {:#x},\n\
             .l2_pkt_mem = (void *){:#x}, .home_cluster_id = {:#x}, .flow_id = {:#x} }};\n\
             __attribute__((used)) const handler_args_t ref_args = {{ (task_t *)0x10008000, 33, 2, 7 }};\n",
            d.handler_mem,
            d.handler_mem_size,
            d.pkt_mem,
            d.pkt_mem_size,
            list(&|k| d.scratchpad[k].0),
            list(&|k| d.scratchpad[k].1),
            d.host_mem >> 32,
            d.host_mem as u32,
            d.host_mem_size,
            d.l2_pkt_mem,
            d.home_cluster_id,
            d.flow_id
        );
        let c = dir.join(format!("ref{n}.c"));
        let o = dir.join(format!("ref{n}.o"));
        std::fs::write(&c, src).unwrap();
        let out = clang(n)
            .arg("-c")
            .arg(&c)
            .arg("-o")
            .arg(&o)
            .output()
            .expect("run clang-19");
        assert!(
            out.status.success(),
            "NB_CLUSTERS={n}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );

        let mut want = vec![0u8; TaskLayout::new(n).size() as usize];
        d.encode(n, &mut want);
        assert_eq!(
            object_bytes(&o, "ref_task"),
            want,
            "task_t, NB_CLUSTERS={n}"
        );
        let mut want = [0u8; HandlerArgs::SIZE as usize];
        HandlerArgs {
            task: 0x1000_8000,
            hpu_gid: 33,
            cluster_id: 2,
            hpu_id: 7,
        }
        .encode(&mut want);
        assert_eq!(object_bytes(&o, "ref_args"), want, "handler_args_t");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// sdk/include/spin_node.h compiles alone, lays its structs out as
/// `abi::node_table` says, and `abi::encode_node_table` writes the bytes
/// clang emits for the same table.
#[test]
fn node_table_layout_and_bytes_match_spin_node_h() {
    use abi::node_table as nt;
    let dir = scratch_dir("nodes");
    let mut src = String::from("#include <spin_node.h>\n");
    let mut check = |expr: String, v: u32| {
        src += &format!("_Static_assert({expr} == {v}, \"{expr} is not {v} (Rust)\");\n")
    };
    check("sizeof(spin_node_t)".into(), nt::ENTRY_SIZE);
    for (f, off) in nt::ENTRY_FIELDS {
        check(format!("offsetof(spin_node_t, {f})"), off);
    }
    check("offsetof(spin_node_table_t, my_rank)".into(), nt::MY_RANK);
    check(
        "offsetof(spin_node_table_t, num_nodes)".into(),
        nt::NUM_NODES,
    );
    check("offsetof(spin_node_table_t, nodes)".into(), nt::NODES);
    check("SPIN_NO_RANK".into(), nt::NO_RANK);
    // Network byte order on a little-endian HPU: 10.1.2.3 reads as 0x0302010a.
    src += "#define BE32(a,b,c,d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)\n\
        #define BE16(x) ((uint16_t)((((x) & 0xff) << 8) | ((x) >> 8)))\n\
        __attribute__((used)) const struct { spin_node_table_t h; spin_node_t n[2]; } ref_table = {\n\
        { 1, 2, {0, 0} },\n\
        { { BE32(10, 1, 2, 3), {0x02, 0x53, 0x0a, 0x01, 0x02, 0x03}, BE16(9330), 0 },\n\
          { BE32(192, 168, 7, 9), {0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}, BE16(7), 1 } } };\n";
    let c = dir.join("nodes.c");
    let o = dir.join("nodes.o");
    std::fs::write(&c, src).unwrap();
    let out = clang(4)
        .arg("-c")
        .arg(&c)
        .arg("-o")
        .arg(&o)
        .output()
        .expect("run clang-19");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = abi::encode_node_table(
        1,
        &[
            abi::NodeEntry {
                ipv4: [10, 1, 2, 3],
                mac: [2, 0x53, 10, 1, 2, 3],
                udp_port: 9330,
            },
            abi::NodeEntry {
                ipv4: [192, 168, 7, 9],
                mac: [2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee],
                udp_port: 7,
            },
        ],
    )
    .unwrap();
    assert_eq!(object_bytes(&o, "ref_table"), want);
    // A rank outside the table, or too many nodes, is refused.
    assert!(abi::encode_node_table(2, &want_entries(2)).is_none());
    assert!(abi::encode_node_table(0, &want_entries(abi::MAX_NODES as usize + 1)).is_none());
    assert_eq!(abi::empty_node_table()[..4], nt::NO_RANK.to_le_bytes());
    let _ = std::fs::remove_dir_all(dir);
}

fn want_entries(n: usize) -> Vec<abi::NodeEntry> {
    vec![
        abi::NodeEntry {
            ipv4: [0; 4],
            mac: [0; 6],
            udp_port: 0
        };
        n
    ]
}

/// The initialised bytes of a data symbol in a relocatable object.
fn object_bytes(obj: &Path, name: &str) -> Vec<u8> {
    let data = std::fs::read(obj).unwrap();
    let f = object::File::parse(&*data).unwrap();
    let sym = f
        .symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("{name} not in {}", obj.display()));
    let sec = f.section_by_index(sym.section_index().unwrap()).unwrap();
    let bytes = sec.data().unwrap();
    bytes[sym.address() as usize..(sym.address() + sym.size()) as usize].to_vec()
}

/// handler.ld outside its comments: the memory map must come from symbols,
/// so the only numbers allowed are ELF flags, alignment and the gp offset.
#[test]
fn handler_ld_has_no_region_literal() {
    let text = std::fs::read_to_string(sdk_dir().unwrap().join("link/handler.ld")).unwrap();
    let mut code = String::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("/*") {
        code += &rest[..i];
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    code += rest;
    let allowed = ["0", "4", "5", "6", "0x800"];
    for tok in code.split(|c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '$') {
        if tok.starts_with(|c: char| c.is_ascii_digit()) {
            assert!(allowed.contains(&tok), "handler.ld has the literal `{tok}`: region bases and sizes must be --defsym symbols");
        }
    }
    for name in [
        "SOFTSPIN_PROG_MEM_BASE",
        "SOFTSPIN_PROG_MEM_SIZE",
        "SOFTSPIN_L2_HANDLER_BASE",
        "SOFTSPIN_L2_HANDLER_SIZE",
    ] {
        assert!(code.contains(name), "handler.ld does not read {name}");
    }
}

/// A profile file `sdk/link/NAME.ld` (generated from the NIC
/// configuration; crates/sdk-build/tests/profiles.rs keeps it so) as a map.
fn profile_map(name: &str) -> MemoryMap {
    let text = std::fs::read_to_string(sdk_dir().unwrap().join(format!("link/{name}.ld"))).unwrap();
    let get = |sym: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{sym} = ")))
            .unwrap_or_else(|| panic!("{name}.ld: no {sym}"));
        let v = line.split('=').nth(1).unwrap().trim().trim_end_matches(';');
        u32::from_str_radix(v.trim_start_matches("0x"), 16).unwrap()
    };
    let map = MemoryMap {
        l1_size: get("SOFTSPIN_L1_SIZE"),
        l2_handler_size: get("SOFTSPIN_L2_HANDLER_SIZE"),
        l2_pkt_size: get("SOFTSPIN_L2_PKT_SIZE"),
        prog_mem_size: get("SOFTSPIN_PROG_MEM_SIZE"),
    };
    // The bases in the file are the ABI's.
    for (sym, v) in map.link_symbols() {
        assert_eq!(get(&sym), v, "{name}.ld: {sym}");
    }
    map
}

fn symbols(elf: &Path) -> HashMap<String, u64> {
    let data = std::fs::read(elf).unwrap();
    let f = object::File::parse(&*data).unwrap();
    f.symbols()
        .filter_map(|s| Some((s.name().ok()?.to_string(), s.address())))
        .collect()
}

/// Both profiles' maps reach the image: regions where the map puts them,
/// and a map too small for the handler's code refuses to link.
#[test]
fn images_link_where_the_memory_map_says() {
    let dir = scratch_dir("link");
    let src = sdk_dir().unwrap().join("tests/pspin_style_handler.c");
    for (name, clusters) in [("pspin", 4), ("fpspin", 2)] {
        let map = profile_map(name);
        let out = dir.join(format!("{name}.elf"));
        build(&BuildOptions {
            define: vec![format!("NB_CLUSTERS={clusters}")],
            link_symbols: map.link_symbols(),
            ..BuildOptions::handler(&[&src], &out)
        })
        .unwrap();
        let s = symbols(&out);
        assert_eq!(s["__text_start"], abi::PROG_MEM_BASE as u64, "{name}");
        assert_eq!(
            s["__l2_handler_data_start"],
            abi::L2_HANDLER_BASE as u64,
            "{name}"
        );
        assert_eq!(s["__prog_mem_size"], map.prog_mem_size as u64, "{name}");
        assert_eq!(s["__l2_handler_size"], map.l2_handler_size as u64, "{name}");
        for (sym, v) in map.link_symbols() {
            assert_eq!(s[&sym], v as u64, "{name}: {sym}");
        }
        // 256 bytes of program memory cannot hold the handler (with printf).
        let tiny = MemoryMap {
            prog_mem_size: 256,
            ..map
        };
        let r = build(&BuildOptions {
            link_symbols: tiny.link_symbols(),
            ..BuildOptions::handler(&[&src], dir.join("tiny.elf"))
        });
        assert!(r.is_err(), "{name}: a 256-byte program memory linked");
    }
    let _ = std::fs::remove_dir_all(dir);
}
