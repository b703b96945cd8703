//! A host program's side of the control socket: `NicClient` talks to a
//! `softspin nic` process and maps the host memory it shares
//! (docs/host-interface.md).

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::shm::ShmMap;
use super::{recv, send, PROTOCOL_VERSION};
use crate::{Error, Result};

/// An ECTX of the NIC, as `hello` describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteEctx {
    pub ectx: u32,
    pub name: String,
    /// The host window as handlers see it (base address, size).
    pub host_base: Option<u64>,
    pub host_size: Option<u64>,
    /// Where the window starts in [`NicClient::host_mem`].
    pub shm_offset: Option<u64>,
}

/// A notification a handler posted (spin_notify), as the NIC forwarded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteNotification {
    pub id: u32,
    pub ectx: u32,
    pub hpu: u32,
    pub time_ps: u64,
    pub data: Vec<u8>,
    pub host_ref: u64,
}

/// A connection to a NIC process, with its shared host memory mapped.
pub struct NicClient {
    stream: UnixStream,
    map: Option<ShmMap>,
    hello: Value,
    ectxs: Vec<RemoteEctx>,
}

impl NicClient {
    /// Connect to the NIC's control socket, say hello and map the host
    /// memory it shares (if it was started with `--host-shm`).
    pub fn connect(path: impl AsRef<Path>) -> Result<NicClient> {
        let path = path.as_ref();
        let stream = UnixStream::connect(path)
            .map_err(|e| Error::Io(format!("control socket {}: {e}", path.display())))?;
        let mut c = NicClient {
            stream,
            map: None,
            hello: Value::Null,
            ectxs: Vec::new(),
        };
        let h = c.request("hello", json!({}))?;
        c.ectxs = h["ectxs"]
            .as_array()
            .map(|v| v.iter().filter_map(ectx_of).collect())
            .unwrap_or_default();
        if let Some(shm) = h.get("shm").filter(|s| !s.is_null()) {
            let p = shm["path"].as_str().map(PathBuf::from);
            let n = shm["size"].as_u64().and_then(|n| usize::try_from(n).ok());
            let (Some(p), Some(n)) = (p, n) else {
                return Err(Error::Host(format!("hello: a garbled `shm`: {shm}")));
            };
            c.map = Some(ShmMap::open(&p, n)?);
        }
        c.hello = h;
        Ok(c)
    }

    /// What `hello` answered (version, interface, rank, shm, ECTXs).
    pub fn hello(&self) -> &Value {
        &self.hello
    }

    pub fn ectxs(&self) -> &[RemoteEctx] {
        &self.ectxs
    }

    /// The ECTX called `name`.
    pub fn ectx(&self, name: &str) -> Result<&RemoteEctx> {
        self.ectxs
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| Error::Invalid(format!("the NIC has no ECTX `{name}`")))
    }

    /// The shared host memory, in place: what the NIC's DMA writes is here,
    /// and what is written here is what it DMA-reads. Concurrent with the
    /// NIC, as host DRAM is with a NIC (docs/host-interface.md).
    pub fn host_mem(&mut self) -> Result<&mut [u8]> {
        self.map.as_mut().map(ShmMap::bytes).ok_or_else(|| {
            Error::Invalid("the NIC shares no host memory (start it with --host-shm)".into())
        })
    }

    /// The ECTX's host window within [`NicClient::host_mem`].
    pub fn window_mem(&mut self, ectx: u32) -> Result<&mut [u8]> {
        let e = self
            .ectxs
            .iter()
            .find(|e| e.ectx == ectx)
            .ok_or_else(|| Error::Invalid(format!("the NIC has no ECTX {ectx}")))?;
        let (Some(off), Some(n)) = (e.shm_offset, e.host_size) else {
            return Err(Error::Invalid(format!(
                "ECTX {ectx}'s host window is not in shared memory"
            )));
        };
        let (off, n) = (off as usize, n as usize);
        self.host_mem()?
            .get_mut(off..off + n)
            .ok_or_else(|| Error::Host(format!("ECTX {ectx}'s window passes the mapping")))
    }

    /// Send one request; the response's fields, or its error.
    pub fn request(&mut self, op: &str, mut args: Value) -> Result<Value> {
        if !args.is_object() {
            args = json!({});
        }
        args["v"] = PROTOCOL_VERSION.into();
        args["op"] = op.into();
        send(&mut self.stream, &args)?;
        let r = recv(&mut self.stream)?;
        if r["ok"] == true {
            Ok(r)
        } else {
            Err(Error::Invalid(format!(
                "NIC: {op}: {}",
                r["error"]
                    .as_str()
                    .unwrap_or("a response without ok or error")
            )))
        }
    }

    pub fn export_window(
        &mut self,
        ectx: u32,
        key: u32,
        offset: u64,
        size: u64,
        perms: u32,
    ) -> Result<()> {
        self.request(
            "export_window",
            json!({"ectx": ectx, "key": key, "offset": offset, "size": size, "perms": perms}),
        )
        .map(drop)
    }

    pub fn unexport_window(&mut self, ectx: u32, key: u32) -> Result<()> {
        self.request("unexport_window", json!({"ectx": ectx, "key": key}))
            .map(drop)
    }

    /// The ECTX's counters (spin_push_counter): (index, sum, count).
    pub fn counters(&mut self, ectx: u32) -> Result<Vec<(u32, u64, u64)>> {
        let r = self.request("counters", json!({ "ectx": ectx }))?;
        Ok(r["counters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["index"].as_u64().unwrap_or_default() as u32,
                    c["sum"].as_u64().unwrap_or_default(),
                    c["count"].as_u64().unwrap_or_default(),
                )
            })
            .collect())
    }

    /// The NIC's status: engine figures, wire counters, control socket.
    pub fn status(&mut self) -> Result<Value> {
        self.request("status", json!({}))
    }

    /// The next notification, waiting at most `timeout` (None: none came).
    pub fn wait_notification(&mut self, timeout: Duration) -> Result<Option<RemoteNotification>> {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let r = self.request("wait_notification", json!({ "timeout_ms": ms }))?;
        let n = &r["notification"];
        if n.is_null() {
            return Ok(None);
        }
        Ok(Some(RemoteNotification {
            id: n["id"].as_u64().unwrap_or_default() as u32,
            ectx: n["ectx"].as_u64().unwrap_or_default() as u32,
            hpu: n["hpu"].as_u64().unwrap_or_default() as u32,
            time_ps: n["time_ps"].as_u64().unwrap_or_default(),
            data: n["data"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| b.as_u64().unwrap_or_default() as u8)
                .collect(),
            host_ref: n["host_ref"].as_u64().unwrap_or_default(),
        }))
    }

    /// Answer a notification (the handler waiting on it goes on).
    pub fn respond(&mut self, id: u32, value: u64) -> Result<()> {
        self.request("respond", json!({"id": id, "value": value}))
            .map(drop)
    }
}

fn ectx_of(v: &Value) -> Option<RemoteEctx> {
    Some(RemoteEctx {
        ectx: u32::try_from(v["ectx"].as_u64()?).ok()?,
        name: v["name"].as_str()?.to_string(),
        host_base: v["host_base"].as_u64(),
        host_size: v["host_size"].as_u64(),
        shm_offset: v["shm_offset"].as_u64(),
    })
}
