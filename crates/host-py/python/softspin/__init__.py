"""softspin: offload sPIN handlers to a (simulated) sPIN NIC from Python.

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
"""

from ._native import (
    ConfigError,
    Ectx,
    EctxError,
    HandlerError,
    HostMemoryError,
    HostWindow,
    HostWrite,
    Image,
    ImageError,
    InvalidArgumentError,
    MessageDone,
    Nic,
    NicMemoryError,
    Notification,
    NotificationIter,
    OutboundPacket,
    SimError,
    SoftspinError,
    TrafficError,
    BuildError,
    build,
    __version__,
)

__all__ = [
    "Nic",
    "Image",
    "HostWindow",
    "Ectx",
    "OutboundPacket",
    "HostWrite",
    "MessageDone",
    "HandlerError",
    "Notification",
    "NotificationIter",
    "build",
    "SoftspinError",
    "ConfigError",
    "ImageError",
    "EctxError",
    "TrafficError",
    "SimError",
    "HostMemoryError",
    "NicMemoryError",
    "InvalidArgumentError",
    "BuildError",
]
