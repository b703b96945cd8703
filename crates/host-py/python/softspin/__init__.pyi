"""Type stubs of the softspin module (the Python binding of softspin-host)."""

import os
import pathlib
from collections.abc import Iterator, Sequence
from typing import Any, Literal, final

from typing_extensions import Buffer

__version__: str

FrameKind = Literal["ip", "eth"]
Mode = Literal["xdp", "socket"]
StrPath = str | os.PathLike[str]

class Error(Exception):
    """Base class of every error softspin raises (one subclass per error kind)."""

SoftspinError = Error

from .client import NicClient as NicClient  # pure Python (client.py): typed there

class InvalidArgumentError(Error):
    """An argument softspin cannot use (frame kind, packet size, notification id, HPU index...)."""

class LimitError(Error):
    """A size, length or time beyond a documented limit (the message names the argument and limit)."""

class ConfigError(Error):
    """Bad NIC configuration or unknown profile."""

class IoError(Error):
    """A file (handler image, configuration, trace, pcap) could not be read."""

class ImageError(Error):
    """Not a usable handler image."""

class SymbolError(Error):
    """A symbol (or a handler named at install) is not in the image."""

class OverlapError(Error):
    """The ECTX's code or handler memory overlaps an installed ECTX."""

class NicMemoryError(Error):
    """A NIC address range outside NIC memory, or handler memory exhausted."""

class HostMemoryError(Error):
    """A host range outside every window, a window this NIC did not make, or a buffer that cannot be lent."""

class StateError(Error):
    """The ECTX is in the wrong state (already active, not active, messages in flight)."""

class NoEctxError(Error):
    """No such ECTX on this NIC (never installed, uninstalled, or another NIC's)."""

class EctxError(Error):
    """Any other install problem (no handler given, image for another cluster count, undecodable code)."""

class TrafficError(Error):
    """Bad traffic: generator parameter, trace or pcap file."""

class SimError(Error):
    """The simulation rejected a packet (too large for a slot, too short)."""

class BuildError(Error):
    """Compiling or linking a handler image failed (diagnostics went to stderr)."""

class NetError(Error):
    """The live NIC: no such interface, not permitted (root, or mode='socket'), XDP busy or unsupported, bad rules, socket errors."""

class ThreadError(Error):
    """A Nic used from another thread than the one that created it."""

class SlmpGaveUpError(NetError):
    """The SLMP sender gave up; `stats` holds the statistics up to then."""
    stats: dict[str, Any]

def slmp_send(
    to: str,
    messages: Buffer | Sequence[Buffer],
    *,
    window: str = "auto",
    sync: str = "all",
    segment: int | None = None,
    give_up_s: float = 10.0,
    first_msg_id: int = 1,
) -> dict[str, Any]:
    """Send SLMP messages to ADDR[:PORT] (default port 9330) reliably;
    returns the statistics (as `softspin slmp send --json`). Raises
    SlmpGaveUpError when it gives up, InvalidArgumentError for bad settings."""

def load_nodes(path: StrPath) -> list[dict[str, Any]]:
    """A cluster's node table (docs/cluster.md) in rank order: dicts with
    rank, iface, ipv4, mac, udp_port, netns (None on real machines)."""

def build(
    sources: StrPath | Sequence[StrPath],
    output: StrPath,
    *,
    profile: Literal["pspin", "fpspin"] | None = None,
    define: Sequence[str] | None = None,
    include: Sequence[StrPath] | None = None,
    cflags: Sequence[str] | None = None,
    code_base: int | None = None,
    data_base: int | None = None,
    bare: bool = False,
    verbose: bool = False,
) -> pathlib.Path:
    """Build a handler image from C sources with the softspin SDK; returns `output`."""

@final
class Image:
    """A loaded handler image (an RV32 ELF built by `softspin build`)."""

    @property
    def path(self) -> str | None:
        """The file it was loaded from (None when loaded from bytes)."""
    def symbol(self, name: str) -> int:
        """Address of a symbol; raises ImageError if missing."""
    def symbols(self) -> dict[str, int]:
        """All symbols {name: address}."""
    @property
    def data_end(self) -> int:
        """First NIC address past the image's data (handler_mem_addr may start there)."""

@final
class HostWindow:
    """Host memory the NIC may DMA to: handlers see it at `base`, `size` bytes."""

    @property
    def base(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def buffer(self) -> Any | None:
        """The lent object (None for a NIC-owned window)."""

@final
class Ectx:
    """An installed execution context (hashable; dead after uninstall)."""

    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...

@final
class OutboundPacket:
    """A packet a handler sent (spin_send_packet, or an RDMA put to `dest`)."""

    @property
    def time_ns(self) -> float: ...
    @property
    def time_ps(self) -> int: ...
    @property
    def ectx(self) -> Ectx | None: ...
    @property
    def dest(self) -> int: ...
    @property
    def frame(self) -> bytes: ...

@final
class HostWrite:
    """An 8-byte host-direct write (spin_host_write)."""

    @property
    def time_ns(self) -> float: ...
    @property
    def time_ps(self) -> int: ...
    @property
    def ectx(self) -> Ectx | None: ...
    @property
    def addr(self) -> int: ...
    @property
    def value(self) -> int: ...

@final
class MessageDone:
    """A message whose handlers all finished."""

    @property
    def time_ns(self) -> float: ...
    @property
    def time_ps(self) -> int: ...
    @property
    def ectx(self) -> Ectx | None: ...
    @property
    def msg_id(self) -> int: ...

@final
class HandlerError:
    """A handler invocation that faulted or ran out of its watchdog budget, or a message that timed out."""

    @property
    def ectx(self) -> Ectx | None:
        """The ECTX (the handle install returned, even if uninstalled since)."""
    @property
    def ectx_name(self) -> str: ...
    @property
    def msg_id(self) -> int: ...
    @property
    def handler(self) -> str | None: ...
    @property
    def kind(self) -> str:
        """The cause as a name: "store_access", "watchdog", "message_timeout", "wait_timeout", "aborted", "rejected_*"..."""
    @property
    def cause(self) -> str: ...
    @property
    def detail(self) -> str | None: ...
    @property
    def pc(self) -> int | None: ...
    @property
    def addr(self) -> int | None: ...
    @property
    def time_ns(self) -> float: ...
    @property
    def hpu(self) -> int | None: ...

@final
class ErrorsDropped:
    """`count` handler errors happened here whose details were dropped: more
    than 1000 came between two calls of Nic.events(); the first of them and
    the latest 100 are kept, and the report counts them all."""

    @property
    def count(self) -> int: ...

Event = OutboundPacket | HostWrite | MessageDone | HandlerError | ErrorsDropped

@final
class Notification:
    """A request a handler posted with spin_notify; answer with Nic.respond."""

    @property
    def id(self) -> int: ...
    @property
    def ectx(self) -> Ectx | None: ...
    @property
    def hpu(self) -> int: ...
    @property
    def time_ns(self) -> float: ...
    @property
    def time_ps(self) -> int: ...
    @property
    def data(self) -> bytes:
        """Inline payload (up to 64 bytes)."""
    @property
    def host_ref(self) -> int: ...

@final
class NotificationIter(Iterator[Notification]):
    """Iterator from Nic.notifications()."""

    def __iter__(self) -> NotificationIter: ...
    def __next__(self) -> Notification: ...

@final
class Nic:
    """A sPIN NIC: simulated (`Nic(profile)`) or live on an interface (`Nic.attach`).

    Use it from the thread that created it.
    """

    def __init__(self, profile: Literal["pspin", "fpspin"] | str = "pspin") -> None:
        """Open the simulated NIC with a named profile; ConfigError if unknown."""
    @staticmethod
    def attach(
        iface: str,
        mode: Mode = "xdp",
        profile: Literal["pspin", "fpspin"] | str | None = None,
        config: StrPath | None = None,
        wait_timeout: float = 10.0,
    ) -> Nic:
        """Open a NIC on a network interface (live): matched frames run handlers, the rest go to the kernel.

        mode "xdp" needs root; "socket" binds the udp:PORT rules' ports. Default profile
        "fpspin" (Ethernet frames). `wait_timeout` (s) bounds wait_notifications.
        NetError: no such interface, not permitted, XDP busy or unsupported.
        """
    @property
    def is_live(self) -> bool:
        """Whether the NIC is attached to an interface."""
    def run_live(self, duration: float | None = None) -> None:
        """Run a live NIC for `duration` s of wall time, or until Ctrl-C (KeyboardInterrupt)."""
    def live_stats(self) -> dict[str, Any] | None:
        """iface, port, rx_frames, matched, passed_to_kernel, tx_frames, drops {cause: n}, unprocessed, fragments_matched, fragments_passed, tx_lag_ns {min, mean, p50, p99, max}, wall_s; None if simulated."""
    def live_status(self) -> dict[str, Any] | None:
        """A live NIC's progress: the totals of a `softspin nic --progress json` line (wall_s, nic_time_ns, rx_frames, matched, passed_to_kernel, fragments, tx_frames, drops, unprocessed, packets, invocations, errors, errors_total, hpus, hpus_busy) and hpu_busy_ps; None if simulated."""
    @staticmethod
    def from_config(path: StrPath) -> Nic:
        """Open the NIC described by a TOML file (docs/sim.md)."""
    def config(self) -> dict[str, Any]:
        """The NIC configuration (every field of the model)."""
    @property
    def profile(self) -> str: ...
    @property
    def hpu_count(self) -> int: ...
    @property
    def now_ns(self) -> float:
        """Current NIC time in nanoseconds."""
    def load_image(self, path: StrPath) -> Image:
        """Load a handler image; ImageError if missing or not an RV32 ELF."""
    def image_from_bytes(self, data: Buffer) -> Image:
        """Load a handler image from ELF bytes."""
    # host memory
    def host_window(self, size: int) -> HostWindow:
        """A zeroed host window of `size` bytes owned by the NIC."""
    def lend(self, buffer: Buffer) -> HostWindow:
        """Lend a writable C-contiguous uint8 buffer (numpy array, bytearray) in place.

        The NIC holds a buffer export until `unlend`: the object stays alive and
        Python refuses to resize it meanwhile.
        """
    def host_array(self, size: int) -> HostWindow:
        """A new zeroed numpy uint8 array, lent; it is the window's `buffer`."""
    def unlend(self, window: HostWindow) -> None:
        """Take a window back."""
    def host_read(self, addr: int, n: int) -> bytes:
        """Read host memory; HostMemoryError outside every window."""
    def host_write(self, addr: int, data: Buffer) -> None:
        """Write host memory; HostMemoryError outside every window."""
    # ECTX
    def install(
        self,
        image: Image,
        *,
        ph: str | None = None,
        hh: str | None = None,
        th: str | None = None,
        host_window: HostWindow | None = None,
        handler_mem_size: int | None = None,
        handler_mem_addr: int | None = None,
        l1_copy: int | None = None,
        scratchpad: int | Sequence[int] | None = None,
        watchdog: int | None = None,
        msg_timeout_ns: int | None = None,
        udp_dst_port: int | None = None,
        name: str | None = None,
        frame: FrameKind | None = None,
        match: Sequence[str] | None = None,
        rules: StrPath | None = None,
        rules_toml: str | None = None,
        rma_rank: int | None = None,
    ) -> Ectx:
        """Install an ECTX (inactive until `activate`).

        Live NIC: `match` (--match shortcuts: "udp:PORT", "icmp", "ipv4", "all", "slmp"),
        `rules` (a TOML rules file) or `rules_toml` (its text) select its frames.
        `rma_rank`: the RMA transport block in front of it, as that node (docs/rma.md).
        """
    def activate(self, ectx: Ectx) -> None: ...
    def deactivate(self, ectx: Ectx) -> None: ...
    def uninstall(self, ectx: Ectx) -> None: ...
    def set_frame_kind(self, ectx: Ectx, frame: FrameKind) -> None:
        """Frames send_message builds for this ECTX."""
    # NIC memory
    def nic_alloc(self, ectx: Ectx, size: int, align: int = 8) -> int:
        """Allocate handler memory beyond the image's data; returns its NIC address."""
    def nic_read(self, addr: int, n: int) -> bytes: ...
    def nic_write(self, addr: int, data: Buffer) -> None: ...
    def nic_write_ptr(self, addr: int, target: int) -> None: ...
    # RMA memory registration (docs/rma.md)
    def export_window(self, ectx: Ectx, key: int, offset: int, size: int, perms: int) -> None:
        """Export host-window bytes [offset, offset+size) under key (perms: READ 1 | WRITE 2 | ATOMIC 4)."""
    def unexport_window(self, ectx: Ectx, key: int) -> None: ...
    def rma_windows(self, ectx: Ectx) -> list[tuple[int, int, int, int]]:
        """The RMA window table: [(key, perms, base, size)], free entries (key 0) included."""
    def rma_post(self, ectx: Ectx, rank: int, key: int, offset: int, op: str, local: int = 0, len: int = 0,
                 width: int = 8, addend: int = 0, compare: int = 0, swap: int = 0) -> int:
        """Post an RMA operation (put/get/fetch_add/cas); its handle. Completes while the NIC runs."""
    def rma_completions(self, ectx: Ectx) -> list[tuple[int, int, int]]:
        """[(handle, status, value)] completed since the last call, each once."""
    def rma_outstanding(self, ectx: Ectx) -> int: ...
    # traffic
    def send_packet(self, frame: Buffer, msg_id: int = 0, eom: bool = True) -> None:
        """Hand the NIC one packet (a whole frame) now."""
    def send_message(self, ectx: Ectx, msg_id: int, payload: Buffer, packet_size: int = 1024) -> None:
        """Send a message to an ECTX, split into packets of at most packet_size bytes."""
    def feed_trace(self, path: StrPath, frame: FrameKind = "ip") -> None: ...
    def feed_pcap(self, path: StrPath, rate_gbps: float | None = None) -> None: ...
    def feed_generator(
        self,
        *,
        messages: int = 1,
        packets: int = 1,
        size: int = 1024,
        rate_gbps: float | None = None,
        frame: FrameKind = "ip",
        concurrent: int = 1,
        payload: Literal["zero", "seq", "random"] = "seq",
        seed: int = 0,
        first_msg_id: int = 0,
        udp_dst_port: int | None = None,
        udp_src_port: int | None = None,
    ) -> None: ...
    # running
    def run_until_idle(self) -> None: ...
    def run_for(self, ns: int) -> None:
        """Run for ns of NIC time (live: wall time)."""
    # results
    def events(self) -> list[Event]:
        """Events since the last call."""
    def report(self) -> dict[str, Any]:
        """Statistics, the same keys as `softspin sim --json`."""
    def report_text(self) -> str: ...
    def ectx_counts(self, ectx: Ectx) -> tuple[int, int]:
        """(packets admitted, messages completed)."""
    def set_node_table(self, path: StrPath, rank: int) -> None:
        """Give the NIC a node table and its rank (handlers: spin_node.h)."""
    @property
    def rank(self) -> int | None:
        """This NIC's rank, None without a node table."""
    def nodes(self) -> list[dict[str, Any]]:
        """The NIC's node table as load_nodes gives it ([] without one)."""
    def counters(self, ectx: Ectx) -> list[tuple[int, int, int]]:
        """Performance counters: [(index, sum, count)]."""
    def hpu_stdout(self, hpu: int) -> str: ...
    # host notifications
    def poll_notifications(self) -> list[Notification]: ...
    def wait_notifications(self) -> list[Notification]: ...
    def respond(self, id: int, value: int) -> None: ...
    def notifications(self) -> NotificationIter:
        """Iterate over notifications, running the NIC; ends when idle with none pending."""
