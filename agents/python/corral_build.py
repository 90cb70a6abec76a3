"""A PEP 517 build backend for corral_agent, with the standard library only.

pip install ./agents/python builds a wheel with it: corral_agent.py and
the metadata a wheel must carry (PEP 427), nothing else.  It exists so
that the install needs neither setuptools nor the wheel package, and works
offline.  The name and version are pyproject.toml's; keep them in step.
"""

import base64
import hashlib
import os
import zipfile

NAME = "corral_agent"
DIST = "corral-agent"
VERSION = "1"
MODULE = "corral_agent.py"
HERE = os.path.dirname(os.path.abspath(__file__))

METADATA = """Metadata-Version: 2.1
Name: {dist}
Version: {version}
Summary: Write corral agents in Python, with the standard library only
Requires-Python: >=3.9
""".format(dist=DIST, version=VERSION)

WHEEL = """Wheel-Version: 1.0
Generator: corral_build
Root-Is-Purelib: true
Tag: py3-none-any
"""


def _record_line(name, data):
    """One line of RECORD: the file, its sha256 and its size."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d\n" % (name, digest.rstrip(b"=").decode(),
                                  len(data))


def _files():
    """The wheel's files but RECORD, as (name, bytes)."""
    with open(os.path.join(HERE, MODULE), "rb") as f:
        module = f.read()
    info = "%s-%s.dist-info" % (NAME, VERSION)
    return [(MODULE, module),
            (info + "/METADATA", METADATA.encode()),
            (info + "/WHEEL", WHEEL.encode())], info


def get_requires_for_build_wheel(config_settings=None):
    """Nothing is needed to build."""
    return []


def get_requires_for_build_editable(config_settings=None):
    """Nothing is needed to build."""
    return []


def _write_wheel(directory, files, info):
    """Write the wheel of files (and their RECORD); return its name."""
    name = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
    record = "".join(_record_line(n, d) for n, d in files)
    record += info + "/RECORD,,\n"
    with zipfile.ZipFile(os.path.join(directory, name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            z.writestr(n, d)
        z.writestr(info + "/RECORD", record)
    return name


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    """Write the wheel into wheel_directory; return its file name."""
    files, info = _files()
    return _write_wheel(wheel_directory, files, info)


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    """pip install -e: a wheel whose .pth file points at this directory."""
    files, info = _files()
    files = [(NAME + ".pth", (HERE + "\n").encode())] + files[1:]
    return _write_wheel(wheel_directory, files, info)
