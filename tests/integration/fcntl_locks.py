#!/usr/bin/env python3
# tests/integration/fcntl_locks.py - fcntl(2) byte-range locks between two
# mounts of one Weir filesystem (test_fuse.sh runs it with the same file seen
# through two FUSE mounts; any two paths to one file of a cluster filesystem
# do). Each check runs real processes (fork) and asserts what the kernel
# answered: conflicts, F_GETLK's answer, POSIX's close rule, a blocking
# F_SETLKW woken by the unlock, OFD locks, a killed holder, a signal during
# a wait. Prints one line per check; exit 0 when all pass, 1 otherwise.
#
# usage: fcntl_locks.py PATH_ON_MOUNT_A PATH_ON_MOUNT_B
import errno
import fcntl
import os
import signal
import struct
import sys
import time

F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 36, 37, 38
FLOCK_FMT = "hhqqi4x"  # struct flock on Linux x86_64/aarch64 (native alignment)

A, B = sys.argv[1], sys.argv[2]
fails = 0


def flock_struct(typ, start, length, pid=0):
    return struct.pack(FLOCK_FMT, typ, os.SEEK_SET, start, length, pid)


def setlk(fd, typ, start, length, cmd=fcntl.F_SETLK):
    """0, or the errno of the failed fcntl."""
    try:
        fcntl.fcntl(fd, cmd, flock_struct(typ, start, length))
        return 0
    except OSError as e:
        return e.errno


def getlk(fd, typ, start, length, cmd=fcntl.F_GETLK):
    r = fcntl.fcntl(fd, cmd, flock_struct(typ, start, length))
    t, _, s, ln, pid = struct.unpack(FLOCK_FMT, r)
    return t, s, ln, pid


def check(name, cond, detail):
    global fails
    print("  %-36s %s" % (name, "ok (%s)" % detail if cond else "FAILED: %s" % detail))
    if not cond:
        fails += 1


class Holder:
    """A child process that opens PATH, runs its lock calls, says 'ready' on a
    pipe, and does what the parent writes: 'c' closes another descriptor of
    the file, 'u' unlocks everything, 'x' exits."""

    def __init__(self, path, cmds, ofd=False):
        self.r_ready, w_ready = os.pipe()
        r_cmd, self.w_cmd = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.r_ready)
            os.close(self.w_cmd)
            code = 0
            try:
                fd = os.open(path, os.O_RDWR)
                for typ, start, length in cmds:
                    rc = setlk(fd, typ, start, length, F_OFD_SETLK if ofd else fcntl.F_SETLK)
                    if rc:
                        os.write(w_ready, b"E%d" % rc)
                        os._exit(2)
                os.write(w_ready, b"R")
                while True:
                    c = os.read(r_cmd, 1)
                    if c == b"c":
                        other = os.open(path, os.O_RDONLY)
                        os.close(other)  # POSIX: drops this process's locks on the file
                    elif c == b"u":
                        setlk(fd, fcntl.F_UNLCK, 0, 0, F_OFD_SETLK if ofd else fcntl.F_SETLK)
                    elif c == b"f":
                        os.close(fd)
                    if c in (b"x", b""):
                        break
                    os.write(w_ready, b"D")
            except Exception as e:  # noqa: BLE001 (reported through the exit code)
                sys.stderr.write("holder: %r\n" % e)
                code = 3
            os._exit(code)
        os.close(w_ready)
        os.close(r_cmd)
        msg = os.read(self.r_ready, 16)
        if msg != b"R":
            raise RuntimeError("holder could not lock: %r" % msg)

    def do(self, c):
        os.write(self.w_cmd, c)
        return os.read(self.r_ready, 1) == b"D"

    def end(self):
        try:
            os.write(self.w_cmd, b"x")
        except OSError:
            pass
        _, st = os.waitpid(self.pid, 0)
        os.close(self.r_ready)
        os.close(self.w_cmd)
        return st


def poll_setlk(path, typ, start, length, secs=5.0):
    """Try F_SETLK through PATH until it succeeds or SECS pass (a release the
    kernel sends after close(2) returned). Returns (errno or 0, seconds)."""
    t0 = time.monotonic()
    fd = os.open(path, os.O_RDWR)
    try:
        while True:
            rc = setlk(fd, typ, start, length)
            if rc == 0 or time.monotonic() - t0 > secs:
                return rc, time.monotonic() - t0
            time.sleep(0.05)
    finally:
        os.close(fd)


def main():
    with open(A, "wb") as f:
        f.write(b"\0" * 4096)

    # 1. a write lock through A excludes B's overlapping locks, not others
    h = Holder(A, [(fcntl.F_WRLCK, 0, 100)])
    fd = os.open(B, os.O_RDWR)
    over = setlk(fd, fcntl.F_WRLCK, 50, 10)
    rd = setlk(fd, fcntl.F_RDLCK, 99, 1)
    beside = setlk(fd, fcntl.F_WRLCK, 100, 100)
    t, s, ln, pid = getlk(fd, fcntl.F_WRLCK, 0, 0)
    check("fcntl conflict across mounts",
          over == errno.EAGAIN and rd == errno.EAGAIN and beside == 0,
          "overlap: %s, read lock: %s, beside: %s" %
          (errno.errorcode.get(over, over), errno.errorcode.get(rd, rd), beside or "granted"))
    check("F_GETLK across mounts", t == fcntl.F_WRLCK and s == 0 and ln == 100,
          "type %d start %d len %d pid %d" % (t, s, ln, pid))
    os.close(fd)  # drops B's lock on 100..199 (its close)

    # 2. POSIX's close rule: the holder closing ANY descriptor of the file frees it
    h.do(b"c")
    rc, secs = poll_setlk(B, fcntl.F_WRLCK, 0, 100)
    check("close of another fd releases", rc == 0, "B locked 0..99 after %.2f s" % secs)
    h.end()

    # 3. F_SETLKW waits for the holder's unlock, and only that long
    h = Holder(A, [(fcntl.F_WRLCK, 0, 0)])
    pid = os.fork()
    if pid == 0:
        fd = os.open(B, os.O_RDWR)
        t0 = time.monotonic()
        rc = setlk(fd, fcntl.F_WRLCK, 10, 10, fcntl.F_SETLKW)
        waited = time.monotonic() - t0
        os._exit(0 if rc == 0 and waited >= 0.8 else 1)
    time.sleep(1.0)
    done, st = os.waitpid(pid, os.WNOHANG)
    blocked = done == 0
    h.do(b"u")
    if blocked:
        _, st = os.waitpid(pid, 0)
    check("F_SETLKW woken by the unlock", blocked and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0,
          "waiter blocked while held: %s, exit %s" % (blocked, os.waitstatus_to_exitcode(st)))
    h.end()

    # 4. OFD locks: the open file owns them; they go at its last close
    h = Holder(A, [(fcntl.F_WRLCK, 0, 10)], ofd=True)
    fd = os.open(B, os.O_RDWR)
    held = setlk(fd, fcntl.F_RDLCK, 5, 1)
    t, s, ln, _ = getlk(fd, fcntl.F_RDLCK, 0, 0, F_OFD_GETLK)
    os.close(fd)
    h.do(b"f")
    rc, secs = poll_setlk(B, fcntl.F_WRLCK, 0, 10)
    check("OFD locks across mounts",
          held == errno.EAGAIN and t == fcntl.F_WRLCK and s == 0 and ln == 10 and rc == 0,
          "conflict %s, F_OFD_GETLK type %d %d+%d, free %.2f s after its close" %
          (errno.errorcode.get(held, held), t, s, ln, secs))
    h.end()

    # 5. a holder killed with SIGKILL: the kernel closes its files, the locks go
    h = Holder(A, [(fcntl.F_WRLCK, 0, 0)])
    os.kill(h.pid, signal.SIGKILL)
    os.waitpid(h.pid, 0)
    rc, secs = poll_setlk(B, fcntl.F_WRLCK, 0, 0)
    check("killed holder's locks go", rc == 0, "free after %.2f s" % secs)
    os.close(h.r_ready)
    os.close(h.w_cmd)

    # 6. two processes of one mount also exclude each other (the MDS's locks)
    h = Holder(A, [(fcntl.F_RDLCK, 0, 0)])
    fd = os.open(A, os.O_RDWR)
    w = setlk(fd, fcntl.F_WRLCK, 0, 0)
    r = setlk(fd, fcntl.F_RDLCK, 0, 0)
    os.close(fd)
    check("one mount, two processes", w == errno.EAGAIN and r == 0,
          "write lock: %s, read lock: %s" % (errno.errorcode.get(w, w), r or "shared"))
    h.end()

    # 7. a signal ends an F_SETLKW wait (EINTR) and leaves no lock behind
    h = Holder(A, [(fcntl.F_WRLCK, 0, 0)])
    pid = os.fork()
    if pid == 0:
        class Alarm(Exception):
            pass

        def on_alarm(*_):
            raise Alarm()  # (a handler that returns makes Python retry the fcntl)

        signal.signal(signal.SIGALRM, on_alarm)
        fd = os.open(B, os.O_RDWR)
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        try:
            setlk(fd, fcntl.F_WRLCK, 0, 0, fcntl.F_SETLKW)
            os._exit(1)  # granted while held
        except Alarm:
            os._exit(0)
    _, st = os.waitpid(pid, 0)
    intr = os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0
    h.do(b"u")
    rc, secs = poll_setlk(A, fcntl.F_WRLCK, 0, 0)
    check("F_SETLKW interrupted", intr and rc == 0,
          "EINTR: %s; lock free after the holder's unlock: %s" % (intr, rc == 0))
    h.end()

    print("fcntl_locks: %d failed" % fails)
    return 1 if fails else 0


sys.exit(main())
