"""The event classes carry every field of the host API's events
(softspin_host::EVENTS and Notification, exported as _native._EVENT_FIELDS):
a field added in Rust fails here until the Python class (and its stub) has
it, and this map says where."""

import ast
import pathlib

import softspin
from softspin import _native

# Rust kind -> (Python class, {Rust field: Python attributes carrying it}).
PY_EVENTS = {
    "OutPacket": (
        softspin.OutboundPacket,
        {"ectx": ["ectx"], "time_ps": ["time_ps", "time_ns"], "dest": ["dest"], "frame": ["frame"]},
    ),
    "HostWrite": (
        softspin.HostWrite,
        {"ectx": ["ectx"], "time_ps": ["time_ps", "time_ns"], "addr": ["addr"], "value": ["value"]},
    ),
    "MessageDone": (
        softspin.MessageDone,
        {"ectx": ["ectx"], "time_ps": ["time_ps", "time_ns"], "msg_id": ["msg_id"]},
    ),
    "HandlerError": (
        softspin.HandlerError,
        {
            "ectx": ["ectx"],
            "ectx_name": ["ectx_name"],
            "msg_id": ["msg_id"],
            "handler": ["handler"],
            "kind": ["kind"],
            "cause": ["cause"],
            "detail": ["detail"],
            "pc": ["pc"],
            "addr": ["addr"],
            "time_ns": ["time_ns"],
            "hpu": ["hpu"],
        },
    ),
    "ErrorsDropped": (softspin.ErrorsDropped, {"count": ["count"]}),
    "Notification": (
        softspin.Notification,
        {
            "ectx": ["ectx"],
            "id": ["id"],
            "hpu": ["hpu"],
            "time_ps": ["time_ps", "time_ns"],
            "data": ["data"],
            "host_ref": ["host_ref"],
        },
    ),
}


def attributes(cls):
    """The read-only attributes a pyclass exposes (its getset or member
    descriptors)."""
    kinds = ("getset_descriptor", "member_descriptor")
    return {n for n, v in vars(cls).items() if type(v).__name__ in kinds}


def stub_properties():
    """Class name -> properties, from the package's type stub."""
    tree = ast.parse((pathlib.Path(softspin.__file__).parent / "__init__.pyi").read_text())
    return {
        c.name: {f.name for f in c.body if isinstance(f, ast.FunctionDef)}
        for c in tree.body
        if isinstance(c, ast.ClassDef)
    }


def test_rust_kinds_and_fields_are_all_mapped():
    rust = {k: list(v) for k, v in _native._EVENT_FIELDS.items()}
    assert list(rust) == list(PY_EVENTS), "a new Rust event kind needs a Python class"
    for kind, fields in rust.items():
        assert fields == list(PY_EVENTS[kind][1]), f"{kind}: give the Python class the new field"
    # Independent of the export: fields the Rust types have had since ABI 1.
    assert rust["OutPacket"][:2] == ["ectx", "time_ps"] and "frame" in rust["OutPacket"]


def test_classes_and_stubs_have_the_mapped_attributes():
    stubs = stub_properties()
    for kind, (cls, fields) in PY_EVENTS.items():
        mapped = {a for attrs in fields.values() for a in attrs}
        assert attributes(cls) == mapped, f"{cls.__name__} ({kind})"
        assert stubs[cls.__name__] - {"__repr__"} == mapped, f"stub of {cls.__name__}"


def test_reprs_name_the_class(handlers_elf):
    seen = {}
    # One NIC per handler: the image's data is installed once per NIC.
    for ph, kw in [
        ("echo_ph", {}),
        ("hostwrite_ph", {"window": True}),
        ("fault_ph", {}),
        ("notify_ph", {"window": True}),
    ]:
        nic = softspin.Nic("pspin")
        img = nic.load_image(handlers_elf)
        w = nic.host_window(1024) if kw else None
        e = nic.install(img, ph=ph, host_window=w)
        nic.activate(e)
        nic.send_message(e, 1, (3).to_bytes(4, "little"), 64)
        for req in nic.notifications():
            seen.setdefault(type(req), req)
            nic.respond(req.id, 0)
        for x in nic.events():
            seen.setdefault(type(x), x)
    want = {cls for cls, _ in PY_EVENTS.values()} - {softspin.ErrorsDropped}
    assert want <= set(seen), set(seen)
    for cls, x in seen.items():
        assert repr(x).startswith(cls.__name__ + "("), repr(x)
