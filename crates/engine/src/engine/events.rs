//! The engine's event queue: a calendar queue (R. Brown, "Calendar queues",
//! CACM 1988) keyed by virtual time. It hands out events in exactly the
//! order of a binary heap of (time, sequence number) — the order every
//! result of the model depends on — at a constant cost per event where the
//! heap paid a logarithmic one (issue 14: the heap was ~29 % of the host
//! instructions per packet).
//!
//! Time is cut into buckets of `2^BUCKET_SHIFT` ps. Each of the next `RING`
//! buckets is a vector kept in (time, seq) order: an event is pushed with
//! the largest seq so far, so it goes after every event of its time,
//! usually at the end (one comparison). The bucket being processed (and
//! anything scheduled before it) is read from the front; events further
//! ahead (message deadlines, wait limits) wait in a small heap and move into
//! the ring as it reaches them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::Ev;

/// 1.024 ns per bucket: about one packet's arrival at 64 B and 400 Gbit/s,
/// one cycle at 1 GHz, so a bucket holds a handful of events.
const BUCKET_SHIFT: u32 = 10;
/// Buckets in the ring: 512 * 1.024 ns = 524 ns ahead, more than a 64 B
/// task's copy, start and end take; later events wait in the far heap. A
/// ring of 4096 buckets was 10 % slower at 64 B: every bucket's vector is
/// touched once per turn, and 4096 of them fall out of the caches.
const RING: usize = 512;
const WORDS: usize = RING / 64;

#[derive(Clone, Copy, Debug)]
pub(super) struct Event {
    pub(super) time: u64,
    pub(super) seq: u64,
    pub(super) ev: Ev,
}

// Half a cache line: the ring's buckets are the queue's working set.
const _: () = assert!(std::mem::size_of::<Event>() == 32);

impl Event {
    fn key(&self) -> (u64, u64) {
        (self.time, self.seq)
    }
}

// The far heap orders by (time, seq) only, as the queue does.
impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key().cmp(&o.key())
    }
}

fn bucket(time: u64) -> u64 {
    time >> BUCKET_SHIFT
}

/// Insert `e` into `v`, kept in (time, seq) order, searching from the end
/// (where a new event usually belongs).
fn insert_sorted(v: &mut Vec<Event>, e: Event) {
    let mut at = v.len();
    while at > 0 && v[at - 1].key() > e.key() {
        at -= 1;
    }
    v.insert(at, e);
}

/// Events ordered by (time, seq); `seq` must be unique.
pub(super) struct EventQueue {
    /// Events of bucket `cur` and earlier in (time, seq) order from `head`
    /// on: the next event is `now[head]`.
    now: Vec<Event>,
    head: usize,
    /// The current bucket.
    cur: u64,
    /// Slot `b % RING` holds the events of bucket b, for cur < b < cur + RING.
    ring: Vec<Vec<Event>>,
    /// One bit per non-empty ring slot, to skip empty buckets quickly.
    occupied: [u64; WORDS],
    in_ring: usize,
    /// Events of buckets >= cur + RING (as of when `cur` last moved).
    far: BinaryHeap<Reverse<Event>>,
}

impl EventQueue {
    pub(super) fn new() -> EventQueue {
        EventQueue {
            now: Vec::new(),
            head: 0,
            cur: 0,
            ring: (0..RING).map(|_| Vec::new()).collect(),
            occupied: [0; WORDS],
            in_ring: 0,
            far: BinaryHeap::new(),
        }
    }

    /// Usually a ring bucket's end; the rest out of line.
    #[inline]
    pub(super) fn push(&mut self, e: Event) {
        let b = bucket(e.time);
        if b > self.cur && b - self.cur < RING as u64 {
            let slot = (b % RING as u64) as usize;
            insert_sorted(&mut self.ring[slot], e);
            self.occupied[slot / 64] |= 1 << (slot % 64);
            self.in_ring += 1;
        } else {
            self.push_slow(e, b);
        }
    }

    /// Bucket `b` is the current one or earlier, or beyond the ring.
    #[inline(never)]
    fn push_slow(&mut self, e: Event, b: u64) {
        if b <= self.cur {
            // Earlier buckets can only come after a run stopped at `until`
            // short of the next event; they are still the smallest.
            // Usually it goes last (the largest seq, at the latest time so
            // far): no search, no move.
            if self.now.len() == self.head || self.now[self.now.len() - 1].key() < e.key() {
                self.now.push(e);
                return;
            }
            let at = self.head + self.now[self.head..].partition_point(|x| x.key() < e.key());
            self.now.insert(at, e);
        } else {
            // Beyond the ring.
            self.far.push(Reverse(e));
        }
    }

    /// The next event (the smallest (time, seq)), without moving the
    /// current bucket: a run that stops at `until` short of it (the live
    /// NIC's, at every step) leaves the queue where it was, so the events
    /// pushed next (frames of the next step, their tasks) still go to their
    /// own buckets, not all into `now` by binary search and insertion.
    ///
    /// Inline for the common case (the current bucket's next event), the
    /// rest out of line: the event loop peeks once per event.
    #[inline]
    pub(super) fn peek(&self) -> Option<&Event> {
        match self.now.get(self.head) {
            Some(e) => Some(e),
            None => self.peek_later(),
        }
    }

    /// `peek` past the current bucket.
    #[inline(never)]
    fn peek_later(&self) -> Option<&Event> {
        if self.in_ring > 0 {
            return self.ring[self.next_occupied()].first();
        }
        self.far.peek().map(|Reverse(e)| e)
    }

    /// Inline; moving to the next bucket (`advance`) is out of line.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<Event> {
        if self.head == self.now.len() {
            self.advance();
        }
        let e = *self.now.get(self.head)?;
        self.head += 1;
        Some(e)
    }

    /// The next event's time, without moving the current bucket.
    pub(super) fn next_time(&self) -> Option<u64> {
        if let Some(e) = self.now.get(self.head) {
            return Some(e.time);
        }
        if self.in_ring > 0 {
            return Some(self.ring[self.next_occupied()][0].time);
        }
        self.far.peek().map(|Reverse(e)| e.time)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Event> {
        self.now[self.head..]
            .iter()
            .chain(self.ring.iter().flatten())
            .chain(self.far.iter().map(|Reverse(e)| e))
    }

    /// The first occupied ring slot after the current bucket's (the ring
    /// must hold an event).
    fn next_occupied(&self) -> usize {
        let start = ((self.cur + 1) % RING as u64) as usize;
        let (w0, bit) = (start / 64, start % 64);
        // The start word's bits from `start` on, then whole words around the
        // ring, then the start word's bits below `start` (wrapped).
        let first = self.occupied[w0] & (!0u64 << bit);
        if first != 0 {
            return w0 * 64 + first.trailing_zeros() as usize;
        }
        for k in 1..=WORDS {
            let w = (w0 + k) % WORDS;
            if self.occupied[w] != 0 {
                return w * 64 + self.occupied[w].trailing_zeros() as usize;
            }
        }
        unreachable!("in_ring > 0 but no ring slot is occupied")
    }

    /// `now` is used up: make the next non-empty bucket current.
    #[inline(never)]
    fn advance(&mut self) {
        self.now.clear();
        self.head = 0;
        let next = if self.in_ring > 0 {
            let slot = self.next_occupied();
            let start = ((self.cur + 1) % RING as u64) as usize;
            self.cur + 1 + ((slot + RING - start) % RING) as u64
        } else if let Some(Reverse(e)) = self.far.peek() {
            bucket(e.time)
        } else {
            return;
        };
        self.cur = next;
        let slot = (next % RING as u64) as usize;
        if self.occupied[slot / 64] & (1 << (slot % 64)) != 0 {
            // `now` is empty: the swap hands its allocation to the slot.
            std::mem::swap(&mut self.now, &mut self.ring[slot]);
            self.occupied[slot / 64] &= !(1 << (slot % 64));
            self.in_ring -= self.now.len();
        }
        // Far events the ring now reaches move into it.
        while let Some(Reverse(e)) = self.far.peek() {
            let b = bucket(e.time);
            if b - self.cur >= RING as u64 {
                break;
            }
            let Reverse(e) = self.far.pop().unwrap();
            if b == self.cur {
                insert_sorted(&mut self.now, e);
            } else {
                self.push(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random pushes and pops against a binary heap of (time, seq): the same
    /// events come out in the same order, including far jumps, ties in time,
    /// and pushes before the current bucket.
    #[test]
    fn pops_in_binary_heap_order() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut q = EventQueue::new();
        let mut heap = BinaryHeap::new();
        let (mut now, mut seq) = (0u64, 0u64);
        for round in 0..200_000u32 {
            let r = next();
            if r % 3 != 0 {
                let ahead = match r % 7 {
                    0 => 0,
                    1 => (r >> 8) % 64,
                    2 => (r >> 8) % 10_000_000, // beyond the ring
                    3 => (r >> 8) % 1_000_000_000,
                    _ => (r >> 8) % 5_000,
                };
                // Now and then a time before the current bucket (a run
                // stopped at `until` moved `now` back behind it).
                let t = if round % 997 == 0 {
                    now.saturating_sub(3000)
                } else {
                    now + ahead
                };
                seq += 1;
                let e = Event {
                    time: t,
                    seq,
                    ev: Ev::Schedule,
                };
                q.push(e);
                heap.push(Reverse(e));
            } else {
                assert_eq!(
                    q.peek().map(|e| e.key()),
                    heap.peek().map(|Reverse(e)| e.key()),
                    "round {round}"
                );
                let a = q.pop().map(|e| e.key());
                let b = heap.pop().map(|Reverse(e)| e.key());
                assert_eq!(a, b, "round {round}");
                if let Some((t, _)) = a {
                    now = t;
                }
                assert_eq!(q.next_time(), heap.peek().map(|Reverse(e)| e.time));
            }
            if round % 1000 == 0 {
                assert_eq!(q.iter().count(), heap.len());
            }
        }
        while let Some(Reverse(e)) = heap.pop() {
            assert_eq!(q.pop().map(|e| e.key()), Some(e.key()));
        }
        assert!(q.pop().is_none());
    }
}
