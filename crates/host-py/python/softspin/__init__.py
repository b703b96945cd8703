"""softspin: offload sPIN handlers to a sPIN NIC from Python: the simulated
PsPIN NIC, or a live one on a network interface (``Nic.attach``).

A thin binding over the Rust host API (crate ``softspin-host``)::

    import softspin
    nic = softspin.Nic("pspin")
    image = nic.load_image("handler.elf")
    buf = numpy.zeros(1 << 20, dtype=numpy.uint8)
    window = nic.lend(buf)                 # used in place, no copies
    ectx = nic.install(image, ph="my_ph", host_window=window)
    nic.activate(ectx)
    nic.send_message(ectx, 0, b"x" * 4096, packet_size=1024)
    nic.run_until_idle()
    print(nic.report()["packets"], buf[:16])

Live, the same program opens the NIC with
``softspin.Nic.attach("eth0", mode="socket")``, installs with
``match=["udp:7"]`` and runs with ``nic.run_live(10.0)``.
"""

from ._native import (
    BuildError,
    ConfigError,
    Ectx,
    EctxError,
    Error,
    ErrorsDropped,
    HandlerError,
    HostMemoryError,
    HostWindow,
    HostWrite,
    Image,
    ImageError,
    InvalidArgumentError,
    IoError,
    LimitError,
    MessageDone,
    Nic,
    NetError,
    NicMemoryError,
    NoEctxError,
    Notification,
    NotificationIter,
    OutboundPacket,
    OverlapError,
    SimError,
    SlmpGaveUpError,
    StateError,
    SymbolError,
    ThreadError,
    TrafficError,
    build,
    load_nodes,
    slmp_send,
    __version__,
)
from .client import NicClient

# The base class's earlier name.
SoftspinError = Error

__all__ = [
    "Nic",
    "Image",
    "HostWindow",
    "Ectx",
    "OutboundPacket",
    "HostWrite",
    "MessageDone",
    "HandlerError",
    "ErrorsDropped",
    "Notification",
    "NotificationIter",
    "build",
    "slmp_send",
    "load_nodes",
    "Error",
    "InvalidArgumentError",
    "LimitError",
    "ConfigError",
    "IoError",
    "ImageError",
    "SymbolError",
    "OverlapError",
    "NicMemoryError",
    "HostMemoryError",
    "StateError",
    "NoEctxError",
    "EctxError",
    "TrafficError",
    "SimError",
    "BuildError",
    "NetError",
    "SlmpGaveUpError",
    "ThreadError",
    "SoftspinError",
    "NicClient",
]
