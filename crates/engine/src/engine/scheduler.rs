//! The task dispatcher and the cluster-local schedulers (seed 001 §3.2.1
//! "Task dispatcher", §3.2.2): home-cluster dispatch, the L1 packet buffer
//! allocator, the L2 -> L1 copy, and the task descriptor an HPU starts from.

use super::*;

pub(super) struct Task {
    pub(super) kind: HandlerKind,
    pub(super) her: Her,
    pub(super) mpq: usize,
    pub(super) mpq_gen: u64,
    pub(super) cluster: usize,
    pub(super) l1: (u32, u32),
}

/// A cluster as the scheduler sees it: its task queue, L1 packet buffer
/// and free HPUs.
struct Cluster {
    /// Tasks in L1 waiting for an HPU.
    queue: VecDeque<usize>,
    /// Tasks accepted and not yet on an HPU (in DMA or queued).
    pending: u32,
    l1_alloc: Granules,
    free_hpus: VecDeque<usize>,
    /// The cluster's completion-feedback arbiter is free from then.
    fb_free_at: u64,
}

/// The task dispatcher and the cluster schedulers: tasks (HERs on their
/// way to or on an HPU), each cluster's queue, L1 packet buffer and free
/// HPUs, and the dispatcher's one-task-per-cycle pace.
pub(super) struct Scheduler {
    free_at: u64,
    queued: bool,
    /// No cluster had room; a task leaving a cluster unblocks it.
    blocked: bool,
    clusters: Vec<Cluster>,
    tasks: Vec<Option<Task>>,
    free_tasks: Vec<usize>,
}

impl Scheduler {
    /// Every cluster empty, its HPUs (global ids, cluster by cluster) free.
    pub(super) fn new(cfg: &NicConfig) -> Scheduler {
        let per = cfg.hpus_per_cluster as usize;
        Scheduler {
            free_at: 0,
            queued: false,
            blocked: false,
            clusters: (0..cfg.clusters as usize)
                .map(|c| Cluster {
                    queue: VecDeque::new(),
                    pending: 0,
                    l1_alloc: Granules::new(cfg.l1_pkt_buffer),
                    free_hpus: (c * per..(c + 1) * per).collect(),
                    fb_free_at: 0,
                })
                .collect(),
            tasks: Vec::new(),
            free_tasks: Vec::new(),
        }
    }

    /// Queue a Schedule event (at most one) if messages are ready and the
    /// dispatcher is not blocked; not before the dispatcher is free.
    pub(super) fn kick(&mut self, c: &mut Core, ready: bool) {
        if !self.queued && !self.blocked && ready {
            self.queued = true;
            let t = c.now.max(self.free_at);
            c.at(t, Ev::Schedule);
        }
    }

    /// The queued Schedule event is due.
    pub(super) fn schedule_due(&mut self) {
        self.queued = false;
    }

    /// The dispatcher is busy until then (one task per cycle).
    pub(super) fn free_at(&self) -> u64 {
        self.free_at
    }

    pub(super) fn issued_until(&mut self, t: u64) {
        self.free_at = t;
    }

    pub(super) fn block(&mut self) {
        self.blocked = true;
    }

    /// The cluster for a task of message `msg_id` copying `copy` bytes to
    /// L1: the home cluster (message id mod clusters) if it has room (a
    /// queue entry below `cap` and L1 space), else the least loaded one
    /// with room (fewest pending tasks, then lowest index). Takes the queue
    /// entry and the L1 space; returns the cluster and the L1 offset.
    pub(super) fn choose_cluster(
        &mut self,
        msg_id: u32,
        copy: u32,
        cap: u32,
    ) -> Option<(usize, u32)> {
        let n = self.clusters.len();
        let home = msg_id as usize % n;
        // Home first, then the others by (pending tasks, index), picked one
        // at a time (no per-task vector; a cluster that cannot take the task
        // leaves the loads unchanged, so the order is that of a sort).
        let mut tried = 0u64;
        for _ in 0..n {
            let k = if tried == 0 {
                home
            } else {
                (0..n)
                    .filter(|&k| tried & (1 << k) == 0)
                    .min_by_key(|&k| (self.clusters[k].pending, k))
                    .unwrap()
            };
            tried |= 1 << k;
            if self.clusters[k].pending >= cap {
                continue;
            }
            let Some(off) = self.clusters[k].l1_alloc.alloc(copy.max(1)) else {
                continue;
            };
            self.clusters[k].pending += 1;
            return Some((k, off));
        }
        None
    }

    /// Keep a task; returns its id.
    pub(super) fn add_task(&mut self, task: Task) -> usize {
        match self.free_tasks.pop() {
            Some(i) => {
                self.tasks[i] = Some(task);
                i
            }
            None => {
                self.tasks.push(Some(task));
                self.tasks.len() - 1
            }
        }
    }

    pub(super) fn task(&self, t: usize) -> &Task {
        self.tasks[t].as_ref().expect("live task")
    }

    /// The task on an HPU, if any.
    pub(super) fn task_of(&self, t: Option<usize>) -> Option<&Task> {
        t.and_then(|t| self.tasks[t].as_ref())
    }

    /// The task's head is in L1: it waits for an HPU of its cluster.
    pub(super) fn queue_task(&mut self, cl: usize, t: usize) {
        self.clusters[cl].queue.push_back(t);
    }

    /// The position in cluster `cl`'s queue of the next task to start:
    /// the first one `allowed` lets start (the HPU share), if an HPU is free.
    pub(super) fn peek_start(&self, cl: usize, allowed: impl Fn(&Task) -> bool) -> Option<usize> {
        let cluster = &self.clusters[cl];
        if cluster.queue.is_empty() || cluster.free_hpus.is_empty() {
            return None;
        }
        (0..cluster.queue.len()).find(|&k| allowed(self.task(cluster.queue[k])))
    }

    /// Take the task at `k` of cluster `cl`'s queue (`peek_start`) and the
    /// HPU free longest: (HPU, task).
    pub(super) fn take_start(&mut self, cl: usize, k: usize) -> (usize, usize) {
        let cluster = &mut self.clusters[cl];
        let t = cluster.queue.remove(k).unwrap();
        let h = cluster.free_hpus.pop_front().unwrap();
        cluster.pending -= 1;
        self.blocked = false;
        (h, t)
    }

    /// HPU `h` of cluster `cl` finished task `tid`: its L1 space and the
    /// HPU are free. The completion notification takes one cycle per
    /// cluster, then one across clusters (round-robin arbiters, seed 001
    /// §3.2.2): returns when the cluster's arbiter passed it on.
    pub(super) fn hpu_free(&mut self, cl: usize, h: usize, tid: usize, now: u64, ppc: u64) -> u64 {
        let task = self.tasks[tid].as_ref().unwrap();
        let cluster = &mut self.clusters[cl];
        let t_cl = now.max(cluster.fb_free_at);
        cluster.fb_free_at = t_cl + ppc;
        cluster.l1_alloc.free(task.l1.0, task.l1.1.max(1));
        self.blocked = false;
        cluster.free_hpus.push_back(h);
        t_cl
    }

    /// The task's completion reached the MPQ engine: forget it.
    pub(super) fn complete(&mut self, tid: usize) -> Task {
        let task = self.tasks[tid].take().unwrap();
        self.free_tasks.push(tid);
        task
    }

    pub(super) fn clusters(&self) -> usize {
        self.clusters.len()
    }
}

/// A bitmap allocator of 64-byte granules (the L1 packet buffer): first
/// fit, the lowest offset with room. The bitmap is read a word (64
/// granules) at a time, free run by free run, not granule by granule (a
/// 1 KiB packet behind a busy buffer cost thousands of host instructions).
pub(super) struct Granules {
    /// Bit g of word g / 64: granule g is in use. Bits past `len` stay 0.
    used: Vec<u64>,
    len: usize,
}

impl Granules {
    pub(super) fn new(bytes: u32) -> Granules {
        let len = (bytes / 64) as usize;
        Granules {
            used: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// The first granule at or after `g` whose bit is `in_use` (`len` if none).
    fn next(&self, g: usize, in_use: bool) -> usize {
        let mut w = g / 64;
        let mut mask = !0u64 << (g % 64);
        while w < self.used.len() {
            let bits = if in_use { self.used[w] } else { !self.used[w] } & mask;
            if bits != 0 {
                return (w * 64 + bits.trailing_zeros() as usize).min(self.len);
            }
            w += 1;
            mask = !0;
        }
        self.len
    }

    fn set(&mut self, first: usize, n: usize, in_use: bool) {
        for g in first..first + n {
            let bit = 1u64 << (g % 64);
            if in_use {
                self.used[g / 64] |= bit;
            } else {
                self.used[g / 64] &= !bit;
            }
        }
    }

    pub(super) fn alloc(&mut self, bytes: u32) -> Option<u32> {
        let n = bytes.div_ceil(64).max(1) as usize;
        let mut g = 0;
        while g < self.len {
            let start = self.next(g, false);
            let end = self.next(start, true);
            if end - start >= n {
                self.set(start, n, true);
                return Some(start as u32 * 64);
            }
            g = end;
        }
        None
    }

    pub(super) fn free(&mut self, off: u32, bytes: u32) {
        let first = (off / 64) as usize;
        let n = bytes.div_ceil(64).max(1) as usize;
        debug_assert!(first + n <= self.len, "free past the L1 packet buffer");
        self.set(first, n, false);
    }
}

// `dispatch` keeps the clusters it tried in a u64.
const _: () = assert!(crate::config::MAX_CLUSTERS <= 64);

/// HPU `h`'s stack (global HPU index): its lowest NIC address and its size.
/// The stacks of a cluster follow its runtime areas in L1, one per HPU;
/// a task maps exactly its own, so an overflow faults below it.
pub(super) fn hpu_stack(cfg: &NicConfig, h: usize) -> (u32, u32) {
    let cl = (h / cfg.hpus_per_cluster as usize) as u32;
    let hid = (h % cfg.hpus_per_cluster as usize) as u32;
    let off =
        cfg.l1_pkt_buffer + cfg.hpus_per_cluster * cfg.runtime_area() + hid * cfg.hpu_stack_size;
    (
        abi::L1_BASE + cl * abi::L1_CLUSTER_STRIDE + off,
        cfg.hpu_stack_size,
    )
}

impl Engine {
    pub(super) fn kick_scheduler(&mut self) {
        self.sched.kick(&mut self.core, self.mpq.has_ready());
    }

    pub(super) fn schedule(&mut self) {
        self.sched.schedule_due();
        let now = self.core.now;
        if now < self.sched.free_at() {
            self.kick_scheduler();
            return;
        }
        let n = self.mpq.ready_len();
        // Messages held back by the HPU share stay ready, but retrying them
        // at once cannot help: a completion or new work kicks again.
        let mut held_back = false;
        for _ in 0..n {
            let Some(m) = self.mpq.pop_ready() else {
                break;
            };
            if !self.mpq.runnable(m, &self.core.ectxs) {
                continue;
            }
            if !share_allows(
                &self.core,
                &self.sched,
                &self.hpus,
                self.mpq.mpq(m).ectx,
                None,
            ) {
                self.mpq.requeue(m, false);
                held_back = true;
                continue;
            }
            let (kind, her) = self.mpq.next_task(m);
            if !self.dispatch(kind, her, m) {
                // No cluster can take it: the dispatcher blocks until a task
                // leaves a cluster.
                self.mpq.requeue(m, true);
                self.sched.block();
                return;
            }
            self.mpq.issued(m, kind);
            if self.mpq.runnable(m, &self.core.ectxs) {
                self.mpq.requeue(m, false);
            }
            // One task per cycle.
            self.sched.issued_until(now + self.core.ppc);
            held_back = false;
            break;
        }
        if !held_back {
            self.kick_scheduler();
        }
    }

    /// Send a task to a cluster (`Scheduler::choose_cluster`); the cluster
    /// DMA then copies the packet head L2 -> L1.
    pub(super) fn dispatch(&mut self, kind: HandlerKind, her: Her, mpq: usize) -> bool {
        let c = &mut self.core;
        let copy = her.len.min(c.ectx(her.ectx).spec.l1_copy);
        let Some((k, off)) = self
            .sched
            .choose_cluster(her.msg_id, copy, c.cfg.cluster_task_queue)
        else {
            return false;
        };
        // HER -> cluster, then the cluster DMA copies the packet head
        // to L1 (pipelined: width bytes per cycle after a fixed latency).
        let arrive = c.now + c.ns(c.cfg.to_cluster_ns);
        let (_, done) = self.cu.links.cluster_dma(&c.cfg, c.ppc, k, arrive, copy);
        let ready = if copy == 0 { arrive } else { done };
        let task = Task {
            kind,
            her,
            mpq,
            mpq_gen: self.mpq.mpq(mpq).gen,
            cluster: k,
            l1: (off, copy),
        };
        let id = self.sched.add_task(task);
        c.stats.tasks += 1;
        c.ectxs[her.ectx].as_mut().unwrap().tasks += 1;
        c.at(ready, Ev::TaskReady { task: id as u32 });
        true
    }

    pub(super) fn on_task_ready(&mut self, t: usize) {
        let c = &mut self.core;
        let task = self.sched.task(t);
        let (cl, (off, len), slot) = (task.cluster, task.l1, task.her.slot);
        // The copy lands in L1 now.
        c.mem.l2_pkt.copy_to(
            (slot * c.cfg.pkt_slot_size) as usize,
            &c.mem.l1[cl],
            off as usize,
            len as usize,
        );
        self.sched.queue_task(cl, t);
        self.assign(cl);
    }

    /// Start queued tasks of cluster `cl` on its free HPUs.
    pub(super) fn assign(&mut self, cl: usize) {
        loop {
            let (core, hpus) = (&self.core, &self.hpus);
            // `share_allows` reads the scheduler's tasks: the candidate is
            // found first, then taken.
            let sched = &self.sched;
            let pick = sched.peek_start(cl, |t| {
                share_allows(core, sched, hpus, t.her.ectx, Some(cl))
            });
            let Some(k) = pick else { return };
            let (h, t) = self.sched.take_start(cl, k);
            self.start_task(h, t);
            self.kick_scheduler();
        }
    }

    /// Explain a handler fault where the address says more than the fault
    /// kind: a fault while SP is below the HPU's stack, or an access in the
    /// unmapped gap below the stack, is a stack overflow; one near address 0
    /// is a NULL pointer (maybe `task->scratchpad[...]` of an ECTX without
    /// one). `None`: nothing to add. (`HandlerError::detail`; called where
    /// faults become errors.)
    pub(super) fn fault_detail(&self, h: usize, ectx: EctxId, f: &Fault) -> Option<String> {
        use softspin_hpu::FaultKind as K;
        let cfg = &self.core.cfg;
        let (bottom, size) = hpu_stack(cfg, h);
        let hpu = &self.hpus[h].hpu;
        let sp = hpu.reg(2);
        // A frame larger than the stack moves SP below it, and its first
        // access outside any window faults wherever it lands (issue 24: a
        // fixed 1 KiB guard missed a 2 KiB array). The gap below the stack
        // down to the next window is unmapped, so any access there
        // overflowed too, whatever SP says.
        let gap_floor = hpu
            .mem
            .windows()
            .iter()
            .map(|w| w.base as u64 + w.size as u64)
            .filter(|&end| end <= bottom as u64)
            .max()
            .unwrap_or(0) as u32;
        let mem_fault = matches!(
            f.kind,
            K::LoadAccess | K::StoreAccess | K::LoadDenied | K::StoreDenied | K::Misaligned
        );
        let in_gap = mem_fault && f.addr < bottom && f.addr >= gap_floor;
        if (sp < bottom && f.kind != K::Watchdog) || in_gap {
            let (what, at) = if mem_fault && f.addr < bottom {
                ("the access at", f.addr)
            } else {
                ("SP", sp)
            };
            return Some(format!(
                "stack overflow: HPU stack is {size} bytes (hpu_stack_size / --stack-size), {what} 0x{at:08x} is {} bytes below it",
                bottom - at
            ));
        }
        if !mem_fault {
            return None;
        }
        let cl = h / cfg.hpus_per_cluster as usize;
        let e = self.core.ectxs.get(ectx)?.as_ref()?;
        if f.addr.wrapping_sub(abi::NODE_TABLE_BASE) < abi::node_table::SIZE
            && matches!(f.kind, K::StoreAccess | K::StoreDenied)
        {
            return Some(
                "a store to the node table (spin_node.h), which handlers may only read".into(),
            );
        }
        if f.addr < 0x1000 {
            // Say what it is first; the scratchpad is only one way to get a
            // NULL pointer (issue 24: a plain NULL store was blamed on it).
            let what = match f.kind {
                K::StoreAccess | K::StoreDenied => "store to",
                K::LoadAccess | K::LoadDenied => "load from",
                _ => "access at",
            };
            let mut s = format!(
                "{what} address 0x{:08x}, near NULL: nothing is mapped there (a NULL pointer)",
                f.addr
            );
            if e.scratch.get(cl).is_none_or(|s| s.size == 0) {
                s += &format!(
                    "; if it is task->scratchpad[{cl}]: ECTX `{}` has no scratchpad on cluster {cl}, give it one with --scratchpad (scenario: scratchpad = [...])",
                    e.name()
                );
            }
            return Some(s);
        }
        None
    }

    /// Prepare HPU `h` for task `t`: task descriptor, memory windows, call.
    pub(super) fn start_task(&mut self, h: usize, t: usize) {
        let c = &mut self.core;
        let cfg = &c.cfg;
        let task = self.sched.task(t);
        let e = c.ectxs[task.her.ectx].as_ref().unwrap();
        let cl = task.cluster;
        let hid = h % cfg.hpus_per_cluster as usize;
        let l1base = abi::L1_BASE + cl as u32 * abi::L1_CLUSTER_STRIDE;
        let rt_off = cfg.l1_pkt_buffer + hid as u32 * cfg.runtime_area();
        let (stack_base, _) = hpu_stack(cfg, h);
        let stack_off = stack_base - l1base;
        let pkt_l1 = l1base + task.l1.0;
        let l2_pkt = abi::L2_PKT_BASE + task.her.slot * cfg.pkt_slot_size;
        // task_t (one writer: abi::TaskDescriptor, checked against the C
        // header): the ECTX's fields encoded at install, this task's here;
        // then handler_args_t.
        let layout = abi::TaskLayout::new(cfg.clusters);
        let args_off = layout.size().next_multiple_of(16);
        let task_addr = l1base + rt_off;
        let mut d = [0u8; 256];
        d[..e.task_t.len()].copy_from_slice(&e.task_t);
        let desc = abi::TaskDescriptor {
            pkt_mem: pkt_l1,
            pkt_mem_size: task.her.len,
            l2_pkt_mem: l2_pkt,
            home_cluster_id: task.her.msg_id % cfg.clusters,
            flow_id: task.her.msg_id,
            ..Default::default()
        };
        desc.encode_task_fields(cfg.clusters, &mut d);
        abi::HandlerArgs {
            task: task_addr,
            hpu_gid: h as u32,
            cluster_id: cl as u32,
            hpu_id: hid as u32,
        }
        .encode(&mut d[args_off as usize..]);
        c.mem.l1[cl].write(rt_off as usize, &d[..args_off as usize + 16]);

        // The task's view of memory (PsPIN sets the PMP the same way). The
        // ECTX's windows stay from the HPU's previous task when it ran the
        // same ECTX; windows 0 and 1 (the packet in L1 and L2) move to
        // this task's packet, inside the packet buffers kept for them.
        let slot = &mut self.hpus[h];
        let m = &mut slot.hpu.mem;
        let l1 = &c.mem.l1[cl];
        let copy = task.l1.1.max(1);
        let l1_off = task.l1.0 as usize;
        let l2_off = (l2_pkt - abi::L2_PKT_BASE) as usize;
        let plen = task.her.len.max(1);
        let ok = if slot.ctl.mapped_ectx == Some(task.her.ectx) {
            m.move_window(0, pkt_l1, copy).is_ok() && m.move_window(1, l2_pkt, plen).is_ok()
        } else {
            m.clear();
            slot.ctl.mapped_ectx = Some(task.her.ectx);
            slot.program = Some(e.program.clone());
            // Windows 0 and 1 keep the packet buffers (L1's and L2's)
            // for themselves: later tasks move them there unchecked.
            m.map(pkt_l1, copy, l1, l1_off, Perm::RW, MemClass::L1Local).is_ok()
                && m.reserve(0, l1base, cfg.l1_pkt_buffer).is_ok()
                && m.map(l2_pkt, plen, &c.mem.l2_pkt, l2_off, Perm::RW, MemClass::L2).is_ok()
                && m.reserve(1, abi::L2_PKT_BASE, c.mem.l2_pkt.len() as u32).is_ok()
                && m.map(l1base + stack_off, cfg.hpu_stack_size, l1, stack_off as usize, Perm::RW, MemClass::L1Local).is_ok()
                // Writable as in PsPIN, where task_t sits in the HPU's L1 with
                // no protection: PsPIN's aggregate_global `amo_add`s into it.
                // Rewritten for every task and never read back by the NIC.
                && m.map(task_addr, cfg.runtime_area(), l1, rt_off as usize, Perm::RW, MemClass::L1Local).is_ok()
                && m.map(
                    e.handler_mem.0,
                    e.handler_mem.1,
                    &c.mem.l2_handler,
                    (e.handler_mem.0 - abi::L2_HANDLER_BASE) as usize,
                    Perm::RW,
                    MemClass::L2,
                )
                .is_ok()
                // PsPIN's layout: the image's data, shared with its other ECTXs.
                && e.image_data.is_none_or(|d| {
                    m.map(d.0, d.1, &c.mem.l2_handler, (d.0 - abi::L2_HANDLER_BASE) as usize, Perm::RW, MemClass::L2).is_ok()
                })
                && m.map(e.code.0, e.code.1.max(2), &c.mem.prog_mem, (e.code.0 - abi::PROG_MEM_BASE) as usize, Perm::R, MemClass::ProgMem).is_ok()
                // The cluster's node table (spin_node.h): read-only, so no
                // handler can change what every handler relies on.
                && m.map(abi::NODE_TABLE_BASE, abi::node_table::SIZE, &c.mem.node_table, 0, Perm::R, MemClass::L2).is_ok()
                && e.scratch.iter().enumerate().filter(|(_, s)| s.size > 0).all(|(k, s)| {
                    let class = if k == cl { MemClass::L1Local } else { MemClass::L1Remote };
                    let off = (s.addr - abi::L1_BASE - k as u32 * abi::L1_CLUSTER_STRIDE) as usize;
                    m.map(s.addr, s.size, &c.mem.l1[k], off, Perm::RW, class).is_ok()
                })
        };
        debug_assert!(ok, "task windows are disjoint by construction");

        let entry = e.entries[task.kind as usize].expect("scheduled handler exists");
        let now = c.now;
        let start = now + c.cycles(c.cfg.assign_cycles as u64) + c.ns(c.cfg.invoke_ns);
        let hpu = &mut slot.hpu;
        hpu.start_call(
            entry,
            l1base + stack_off + cfg.hpu_stack_size,
            &[task_addr + args_off],
        );
        hpu.instret_limit = hpu.instret.saturating_add(e.spec.watchdog);
        let ctl = &mut slot.ctl;
        ctl.state = HpuState::Running;
        ctl.task = Some(t);
        ctl.gen += 1;
        ctl.t0 = start;
        ctl.c0 = hpu.cycles;
        ctl.i0 = hpu.instret;
        ctl.charged = 0;
        ctl.ld0 = hpu.loads;
        ctl.st0 = hpu.stores;
        ctl.mem0 = hpu.mem.counts().by_class;
        ctl.busy_since = now;
        ctl.wait = None;
        ctl.wait_notify = None;
        hpu.time_base_ns = Ps(start)
            .to_ns()
            .0
            .saturating_sub(c.cfg.hpu.cycles_to_ns(hpu.cycles));
        c.busy_now += 1;
        c.busy_max = c.busy_max.max(c.busy_now);
        // The first quantum runs now, in the event that started the task,
        // at the HPU's own clock (from `start`), as later quanta already
        // run ahead of the event being processed: one event less per task
        // (issue 30). A debugger steps from an event of its own.
        if self.debug.is_some() {
            let gen = ctl.gen;
            c.at(start, Ev::HpuRun { hpu: h as u32, gen });
        } else {
            self.run_hpu(h);
        }
    }
}

#[cfg(test)]
mod dispatch_tests {
    use super::*;

    fn task(msg_id: u32, slot: u32) -> Task {
        Task {
            kind: HandlerKind::Payload,
            her: Her {
                slot,
                len: 64,
                msg_id,
                ectx: 0,
                eom: true,
            },
            mpq: 0,
            mpq_gen: 0,
            cluster: 0,
            l1: (0, 64),
        }
    }

    #[test]
    fn home_cluster_first_then_the_least_loaded() {
        let cfg = NicConfig::default();
        assert_eq!(cfg.clusters, 4);
        let mut s = Scheduler::new(&cfg);
        let cap = 2;
        // Message 5's home is cluster 5 mod 4 = 1, until its queue is full.
        assert_eq!(s.choose_cluster(5, 64, cap), Some((1, 0)));
        assert_eq!(s.choose_cluster(5, 64, cap), Some((1, 64)));
        // Then the least loaded (fewest pending tasks), lowest index first.
        let picks: Vec<usize> = (0..5)
            .map(|_| s.choose_cluster(5, 64, cap).unwrap().0)
            .collect();
        assert_eq!(picks, [0, 2, 3, 0, 2]);
        assert_eq!(s.choose_cluster(5, 64, cap).map(|p| p.0), Some(3));
        // Every queue full: the dispatcher must wait.
        assert_eq!(s.choose_cluster(9, 64, cap), None);
    }

    #[test]
    fn a_cluster_without_l1_space_is_passed_over() {
        let cfg = NicConfig::default();
        let mut s = Scheduler::new(&cfg);
        // Message 2's home takes a copy filling its whole L1 packet buffer.
        assert_eq!(s.choose_cluster(2, cfg.l1_pkt_buffer, 20), Some((2, 0)));
        // Room in its queue, none in its L1: the least loaded other one.
        assert_eq!(s.choose_cluster(2, 64, 20), Some((0, 0)));
        // A copy larger than any L1 packet buffer fits nowhere.
        assert_eq!(s.choose_cluster(1, cfg.l1_pkt_buffer + 64, 20), None);
    }

    #[test]
    fn tasks_start_on_the_longest_free_hpu_and_give_it_back() {
        let cfg = NicConfig::default();
        let per = cfg.hpus_per_cluster as usize;
        let mut s = Scheduler::new(&cfg);
        let (cl, _) = s.choose_cluster(1, 64, 20).unwrap();
        let t0 = s.add_task(task(1, 0));
        let (_, _) = s.choose_cluster(1, 64, 20).unwrap();
        let t1 = s.add_task(task(1, 1));
        s.queue_task(cl, t0);
        s.queue_task(cl, t1);
        // The HPU share may hold the first back: the next allowed one goes.
        assert_eq!(s.peek_start(cl, |t| t.her.slot == 1), Some(1));
        assert_eq!(s.take_start(cl, 1), (cl * per, t1));
        let k = s.peek_start(cl, |_| true).unwrap();
        assert_eq!(s.take_start(cl, k), (cl * per + 1, t0));
        // HPU 0 of the cluster comes back after every other free one.
        let ppc = cfg.ps_per_cycle();
        assert_eq!(s.hpu_free(cl, cl * per, t1, 5_000, ppc), 5_000);
        // The cluster's completion arbiter passes one per cycle.
        assert_eq!(s.hpu_free(cl, cl * per + 1, t0, 5_000, ppc), 5_000 + ppc);
        assert_eq!(s.complete(t1).her.slot, 1);
        // A freed task id is reused.
        assert_eq!(s.add_task(task(2, 2)), t1);
        let (_, _) = s.choose_cluster(1, 64, 20).unwrap();
        s.queue_task(cl, t1);
        let k = s.peek_start(cl, |_| true).unwrap();
        assert_eq!(s.take_start(cl, k), (cl * per + 2, t1));
    }
}

#[cfg(test)]
mod tests {
    use super::Granules;

    /// First fit over a bitmap of bools, the allocator this one replaced.
    struct Reference(Vec<bool>);

    impl Reference {
        fn alloc(&mut self, bytes: u32) -> Option<u32> {
            let n = bytes.div_ceil(64).max(1) as usize;
            let mut run = 0;
            for i in 0..self.0.len() {
                run = if self.0[i] { 0 } else { run + 1 };
                if run == n {
                    self.0[i + 1 - n..=i].fill(true);
                    return Some((i + 1 - n) as u32 * 64);
                }
            }
            None
        }
        fn free(&mut self, off: u32, bytes: u32) {
            let first = (off / 64) as usize;
            self.0[first..first + bytes.div_ceil(64).max(1) as usize].fill(false);
        }
    }

    /// Random allocations and frees give the same offsets as the reference,
    /// buffers of whole and partial words included.
    #[test]
    fn same_offsets_as_first_fit_over_bools() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for bytes in [64 * 64, 100 * 64, 131 * 64, 64] {
            let (mut g, mut r) = (
                Granules::new(bytes),
                Reference(vec![false; (bytes / 64) as usize]),
            );
            let mut live: Vec<(u32, u32)> = Vec::new();
            for _ in 0..20_000 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                if !rng.is_multiple_of(3) || live.is_empty() {
                    let size = (rng >> 16) as u32 % 2100;
                    let (a, b) = (g.alloc(size), r.alloc(size));
                    assert_eq!(a, b, "alloc {size}");
                    if let Some(off) = a {
                        live.push((off, size));
                    }
                } else {
                    let (off, size) = live.swap_remove((rng >> 16) as usize % live.len());
                    g.free(off, size);
                    r.free(off, size);
                }
            }
        }
    }
}
