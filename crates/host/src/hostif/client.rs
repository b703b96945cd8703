//! A host program's side of the control socket: `NicClient` talks to a
//! `softspin nic` process and maps the host memory it shares
//! (docs/host-interface.md).

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::shm::ShmMap;
use super::{recv, send, PROTOCOL_VERSION};
use crate::{Error, Result, RmaCompletion, RmaHandle, RmaOp, RmaRequest};

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
    /// Its image is the RMA handlers (RMA operations go to it).
    pub rma: bool,
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
    /// The ECTX RMA operations are posted on (None: the NIC picks the one
    /// running the RMA handlers).
    rma_ectx: Option<u32>,
    /// How long blocking RMA calls wait (None: until the NIC completes the
    /// operation, which its transport bounds by declaring a silent peer
    /// failed, docs/rma.md "Reliability").
    rma_timeout: Option<Duration>,
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
            rma_ectx: None,
            rma_timeout: None,
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

    /// Post RMA operations on ECTX `ectx` (default: the one running the RMA
    /// handlers, when the NIC has exactly one).
    pub fn set_rma_ectx(&mut self, ectx: Option<u32>) {
        self.rma_ectx = ectx;
    }

    /// How long blocking RMA calls wait (None, the default: until the NIC
    /// completes the operation; an error if the NIC goes away).
    pub fn set_rma_timeout(&mut self, timeout: Option<Duration>) {
        self.rma_timeout = timeout;
    }

    /// Post an RMA operation without waiting (docs/host-interface.md "RMA"):
    /// a put sends `len` bytes of the ECTX's host window at `local` (in
    /// [`NicClient::window_mem`]; stored there before posting), a get lands
    /// there. The handle is this client's: only it sees the completion.
    pub fn post(&mut self, r: &RmaRequest) -> Result<RmaHandle> {
        let request = serde_json::to_value(r)
            .map_err(|e| Error::Invalid(format!("RMA request {r:?}: {e}")))?;
        let v = self.request(
            "rma_post",
            json!({"ectx": self.rma_ectx, "request": request}),
        )?;
        v["handle"]
            .as_u64()
            .map(RmaHandle)
            .ok_or_else(|| Error::Host(format!("rma_post: an answer without a handle: {v}")))
    }

    /// The completion of `h` if it has come (taken: each is returned once).
    pub fn test(&mut self, h: RmaHandle) -> Result<Option<RmaCompletion>> {
        let v = self.request("rma_test", json!({ "handles": [h.0] }))?;
        Ok(completions(&v)?.into_iter().next().map(|(c, _)| c))
    }

    /// Wait at most `timeout` for the completion of `h` (None: not yet).
    pub fn wait(&mut self, h: RmaHandle, timeout: Duration) -> Result<Option<RmaCompletion>> {
        Ok(self.wait_detailed(h, timeout)?.map(|(c, _)| c))
    }

    /// Wait at most `timeout` until some of `handles` (empty: any of this
    /// client's operations) complete; the completions that came (each
    /// taken once).
    pub fn wait_any(
        &mut self,
        handles: &[RmaHandle],
        timeout: Duration,
    ) -> Result<Vec<RmaCompletion>> {
        let hs: Option<Vec<u64>> =
            (!handles.is_empty()).then(|| handles.iter().map(|h| h.0).collect());
        let v = self.request(
            "rma_wait",
            json!({"handles": hs, "timeout_ms": millis(timeout)}),
        )?;
        Ok(completions(&v)?.into_iter().map(|(c, _)| c).collect())
    }

    /// `wait`, with the NIC's sentence for a non-OK status.
    fn wait_detailed(
        &mut self,
        h: RmaHandle,
        timeout: Duration,
    ) -> Result<Option<(RmaCompletion, Option<String>)>> {
        let v = self.request(
            "rma_wait",
            json!({"handles": [h.0], "timeout_ms": millis(timeout)}),
        )?;
        Ok(completions(&v)?.into_iter().next())
    }

    /// Post and wait: the completion's value, or an error naming a non-OK
    /// status (and, for a failed peer, its rank).
    fn blocking(&mut self, r: RmaRequest) -> Result<u64> {
        let h = self.post(&r)?;
        let got = match self.rma_timeout {
            Some(t) => self.wait_detailed(h, t)?,
            None => loop {
                if let Some(c) = self.wait_detailed(h, super::server::MAX_WAIT)? {
                    break Some(c);
                }
            },
        };
        match got {
            Some((c, None)) if c.status == 0 => Ok(c.value),
            Some((c, e)) => {
                Err(Error::Host(e.unwrap_or_else(|| {
                    super::rma_error(c.status, &r).unwrap_or_default()
                })))
            }
            None => Err(Error::Host(format!(
                "RMA {:?} to rank {}: no completion within {:?}",
                r.op,
                r.rank,
                self.rma_timeout.unwrap_or_default()
            ))),
        }
    }

    /// Write `len` bytes of the RMA ECTX's host window at `local` to
    /// `offset` in rank `rank`'s window `key` (sPIN's put from host).
    pub fn put(&mut self, rank: u16, key: u32, offset: u64, local: u64, len: u64) -> Result<()> {
        let op = RmaOp::Put { local, len };
        self.blocking(RmaRequest {
            rank,
            key,
            offset,
            op,
        })
        .map(drop)
    }

    /// Read `len` bytes at `offset` of rank `rank`'s window `key` into the
    /// RMA ECTX's host window at `local` (get to host).
    pub fn get(&mut self, rank: u16, key: u32, offset: u64, local: u64, len: u64) -> Result<()> {
        let op = RmaOp::Get { local, len };
        self.blocking(RmaRequest {
            rank,
            key,
            offset,
            op,
        })
        .map(drop)
    }

    /// Fetch-and-add on the `width`-byte (4 or 8) word at `offset`: the old
    /// word.
    pub fn fetch_add(
        &mut self,
        rank: u16,
        key: u32,
        offset: u64,
        width: u8,
        addend: u64,
    ) -> Result<u64> {
        let op = RmaOp::FetchAdd { width, addend };
        self.blocking(RmaRequest {
            rank,
            key,
            offset,
            op,
        })
    }

    /// Compare-and-swap on the `width`-byte word at `offset`: the old word
    /// (swapped iff it equalled `compare`).
    #[allow(clippy::too_many_arguments)]
    pub fn cas(
        &mut self,
        rank: u16,
        key: u32,
        offset: u64,
        width: u8,
        compare: u64,
        swap: u64,
    ) -> Result<u64> {
        let op = RmaOp::Cas {
            width,
            compare,
            swap,
        };
        self.blocking(RmaRequest {
            rank,
            key,
            offset,
            op,
        })
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The completions of an `rma_wait`/`rma_test` answer, each with the NIC's
/// error sentence for a non-OK status.
fn completions(v: &Value) -> Result<Vec<(RmaCompletion, Option<String>)>> {
    let bad = || Error::Host(format!("an RMA answer with garbled completions: {v}"));
    let list = v["completions"].as_array().ok_or_else(bad)?;
    list.iter()
        .map(|c| {
            let status = c["status"].as_u64().and_then(|s| u8::try_from(s).ok());
            match (c["handle"].as_u64(), status, c["value"].as_u64()) {
                (Some(h), Some(status), Some(value)) => Ok((
                    RmaCompletion {
                        handle: RmaHandle(h),
                        status,
                        value,
                    },
                    c["error"].as_str().map(str::to_string),
                )),
                _ => Err(bad()),
            }
        })
        .collect()
}

fn ectx_of(v: &Value) -> Option<RemoteEctx> {
    Some(RemoteEctx {
        ectx: u32::try_from(v["ectx"].as_u64()?).ok()?,
        name: v["name"].as_str()?.to_string(),
        host_base: v["host_base"].as_u64(),
        host_size: v["host_size"].as_u64(),
        shm_offset: v["shm_offset"].as_u64(),
        rma: v["rma"].as_bool().unwrap_or(false),
    })
}
