"""Shared pieces of the Python end-to-end tests (test_crash.py, and
tests/faults/test_oom.py): a control plane from scripts/cluster-up, a small
API client (stdlib http.client over TLS with the cluster's token), a pod
watch that records what the API server says happened to every pod, the
scheduler as a child process, and gangs of fake GPU pods.

Nothing here asserts: the tests decide what is a violation. Standard library
only (the tests run where scripts/count-tests runs)."""
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

GPU = "nvidia.com/gpu"
GROUP_LABEL = "topogang.io/pod-group"


def log(msg):
    print(msg, flush=True)


class Skip(Exception):
    """The control plane cannot be built here (exit 77)."""


class Cluster:
    """scripts/cluster-up DIR (or an existing DIR with --cluster), torn down
    by down() unless reused."""

    def __init__(self, src, work, reuse=None):
        self.src, self.owned = src, reuse is None
        self.dir = reuse or os.path.join(work, "cp")
        if self.owned:
            env = dict(os.environ, TG_CLUSTER_OWNER=str(os.getpid()))
            with open(os.path.join(work, "cluster-up.log"), "w") as f:
                rc = subprocess.call([os.path.join(src, "scripts/cluster-up"), self.dir],
                                     stdout=f, stderr=subprocess.STDOUT, env=env)
            if rc:
                text = open(os.path.join(work, "cluster-up.log")).read()
                if "cannot build" in text:
                    raise Skip("no control plane: " + text.strip().splitlines()[-1])
                raise RuntimeError("cluster-up failed:\n" + text)
        self.env = {}
        for line in open(os.path.join(self.dir, "env")):
            k, _, v = line.replace("export ", "", 1).strip().partition("=")
            self.env[k] = v
        self.kubeconfig = self.env["KUBECONFIG"]
        self.server = self.env["TG_SERVER"]
        self.token = self.env["TG_TOKEN"]
        self.kubectl = os.path.join(self.env["TG_K8S_BIN"], "kubectl")

    def down(self):
        if self.owned:
            subprocess.call([os.path.join(self.src, "scripts/cluster-down"), self.dir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def apiserver_pid(self):
        return int(open(os.path.join(self.dir, "apiserver.pid")).read())

    def apiserver_kill(self):
        """SIGKILLs kube-apiserver (etcd stays) and waits until it is gone."""
        pid = self.apiserver_pid()
        os.kill(pid, signal.SIGKILL)
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)

    def apiserver_start(self, api, timeout=60):
        """Restarts it with the same flags (DIR/apiserver-start) and waits for /readyz."""
        subprocess.check_call([os.path.join(self.dir, "apiserver-start")])
        end = time.time() + timeout
        while time.time() < end:
            try:
                if api.request("GET", "/readyz", tries=1)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("kube-apiserver not ready after a restart")

    def kubectl_apply(self, path_or_text, text=False):
        cmd = [self.kubectl, "--kubeconfig", self.kubeconfig, "apply", "-f", "-" if text else path_or_text]
        subprocess.run(cmd, input=path_or_text.encode() if text else None, check=True,
                       stdout=subprocess.DEVNULL)


class Api:
    """JSON over HTTPS with the cluster's token; one connection per thread.
    request() retries connection failures (an API server being restarted)
    for up to `tries` attempts, 0.2 s apart."""

    def __init__(self, cluster):
        u = urllib.parse.urlparse(cluster.server)
        self.host, self.port, self.token = u.hostname, u.port, cluster.token
        self.ctx = ssl.create_default_context(cafile=os.path.join(cluster.dir, "ca.crt"))
        self.local = threading.local()

    def connect(self, timeout=30):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def headers(self, body=None, ctype="application/json"):
        h = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        if body is not None:
            h["Content-Type"] = ctype
        return h

    def request(self, method, path, body=None, tries=150, ctype="application/json"):
        """Returns (status, decoded JSON or None)."""
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(tries):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = self.connect()
            try:
                conn.request(method, path, body=data, headers=self.headers(data, ctype))
                r = conn.getresponse()
                raw = r.read()
                try:
                    doc = json.loads(raw) if raw else None
                except ValueError:
                    doc = None
                return r.status, doc
            except (OSError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                if attempt + 1 == tries:
                    raise
                time.sleep(0.2)

    def must(self, method, path, body=None, ok=(200, 201, 202)):
        st, doc = self.request(method, path, body)
        if st not in ok:
            raise RuntimeError(f"{method} {path}: HTTP {st}: {doc and doc.get('message')}")
        return doc

    def create_pod(self, ns, pod):
        return self.must("POST", f"/api/v1/namespaces/{ns}/pods", pod)

    def delete_pod(self, ns, name, uid=None):
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
        if uid:
            body["preconditions"] = {"uid": uid}
        return self.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", body)[0]

    def podgroup(self, ns, name):
        st, doc = self.request("GET", f"/apis/topogang.io/v1alpha1/namespaces/{ns}/podgroups/{name}")
        return doc if st == 200 else None

    def events(self, ns):
        """events.k8s.io/v1 Events of the namespace."""
        doc = self.must("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
        return doc.get("items", [])


def client_gone(sock):
    """True when the peer of sock has closed its end (readable, nothing to read)."""
    import select
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class FaultProxy:
    """Plain HTTP in front of the cluster's kube-apiserver (the bearer token
    added on the way up), for faults a real server will not make on demand:
      drop_answer(pod, s)  the next Binding of that pod is passed up, and its
                           answer is lost (the connection closed instead);
                           for s seconds after, its Bindings get a closed
                           connection, not passed up;
      answer_twice(pod)    the next Binding of that pod is passed up twice and
                           the answer to the second is relayed: what a client
                           hears when its HTTP library sent the request again
                           after the first answer was lost on the way;
      slow_answer(pod, s)  the next Binding of that pod is passed up at once
                           and its answer relayed s seconds later (the
                           scheduler's watch sees the bind first);
      hold_status(True)    PATCHes of PodGroup status wait in the proxy until
                           hold_status(False); one whose client has gone by
                           then is not passed up (noted "status dropped");
      writes()             every write (not GET) relayed, with the time its
                           answer came and its status (noted "answered N");
      stall_bound(True)    the scheduler's pod watch (/api/v1/pods, one for
                           pending and bound pods) holds the events of bound
                           pods (a line with spec.nodeName) until
                           stall_bound(False) and passes the others: the
                           scheduler sees pods come but is blind to binds.
      throttle_binds(s, retry_after, after=n)
                           after n more Bindings are passed up, every Binding
                           is answered 429 TooManyRequests with Retry-After
                           (what API Priority and Fairness answers when the
                           scheduler's priority level is full) for s seconds,
                           not passed up (noted "throttled").
      throttle_pods(pods, retry_after)
                           the next Binding of each of these pods is answered
                           429 with Retry-After, not passed up (noted
                           "throttled"); the others are passed up as usual.
      hold_events(reason)  Event POSTs of that reason wait in the proxy until
                           hold_events(None), then go up (noted "event held");
      fail_events(n)       the next n Event POSTs (events.k8s.io) are answered
                           503 ServiceUnavailable, not passed up (noted
                           "event refused"): an apiserver or etcd hiccup.
    kubeconfig() writes a kubeconfig pointing at it. Watches are relayed as
    they arrive (chunked); everything else is buffered."""

    def __init__(self, cluster, work):
        import http.server
        self.api = Api(cluster)
        self.work = work
        self.lock = threading.Lock()
        self.drop, self.refuse, self.twice, self.slow = {}, {}, set(), {}
        self.storm = None               # throttle_binds: dict(after, seconds, retry_after, until)
        self.throttle_once = {}         # throttle_pods: pod -> Retry-After of its next Binding
        self.event_fails = 0            # fail_events: Event POSTs still to refuse
        self.event_hold = None          # hold_events: the reason held
        self.events_free = threading.Event()
        self.events_free.set()
        self.unstalled = threading.Event()
        self.unstalled.set()
        self.status_free = threading.Event()
        self.status_free.set()
        self.seen = []                  # (time, method, path, what happened)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_any(self):
                proxy.relay(self)
            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_any

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that went
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def drop_answer(self, pod, refuse_s=0):
        with self.lock:
            self.drop[pod] = refuse_s

    def slow_answer(self, pod, s):
        with self.lock:
            self.slow[pod] = s

    def answer_twice(self, pod):
        with self.lock:
            self.twice.add(pod)

    def hold_events(self, reason):
        with self.lock:
            self.event_hold = reason
        if reason:
            self.events_free.clear()
        else:
            self.events_free.set()

    def fail_events(self, n):
        with self.lock:
            self.event_fails = n

    def throttle_binds(self, seconds, retry_after, after=0):
        with self.lock:
            self.storm = {"after": after, "seconds": seconds, "retry_after": retry_after, "until": None}

    def throttle_pods(self, pods, retry_after):
        with self.lock:
            for p in pods:
                self.throttle_once[p] = retry_after

    def storm_window(self):
        """(start, end) of the 429 storm, None before it began."""
        with self.lock:
            st = self.storm
            return (st["until"] - st["seconds"], st["until"]) if st and st["until"] else None

    def hold_status(self, on):
        if on:
            self.status_free.clear()
        else:
            self.status_free.set()

    def stall_bound(self, on):
        if on:
            self.unstalled.clear()
        else:
            self.unstalled.set()

    def events(self, what):
        with self.lock:
            return [e for e in self.seen if e[3] == what]

    def writes(self):
        """(time, method, path, HTTP status) of every write relayed and answered."""
        with self.lock:
            return [(t, m, p, int(w.split()[1])) for t, m, p, w in self.seen
                    if w.startswith("answered ")]

    def kubeconfig(self):
        return write_kubeconfig(os.path.join(self.work, f"proxy-{self.port}.kubeconfig"),
                                f"http://127.0.0.1:{self.port}", "via-proxy")

    def close(self):
        self.unstalled.set()
        self.status_free.set()
        self.events_free.set()
        self.server.shutdown()

    def _note(self, h, what):
        with self.lock:
            self.seen.append((time.time(), h.command, h.path, what))

    def _throttled(self, pod):
        """The Retry-After when pod's Binding arriving now is answered 429
        (throttle_pods, throttle_binds), else None."""
        with self.lock:
            if pod in self.throttle_once:
                return self.throttle_once.pop(pod)
            st = self.storm
            if not st:
                return None
            if st["until"] is None:
                if st["after"] > 0:
                    st["after"] -= 1
                    return None
                st["until"] = time.time() + st["seconds"]
            return st["retry_after"] if time.time() < st["until"] else None

    def relay(self, h):
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else None
        parts = h.path.split("?")[0].split("/")
        pod = parts[-2] if h.command == "POST" and parts[-1] == "binding" else None
        with self.lock:
            dropped = pod is not None and pod in self.drop
            refused = pod is not None and not dropped and self.refuse.get(pod, 0) > time.time()
            if dropped:
                self.refuse[pod] = time.time() + self.drop.pop(pod)
            twice = pod is not None and not dropped and pod in self.twice
            self.twice.discard(pod)
            slow = self.slow.pop(pod, 0) if pod is not None and not dropped else 0
        if refused:
            self._note(h, "refused")
            h.close_connection = True
            return
        if h.command == "POST" and h.path.startswith("/apis/events.k8s.io/"):
            with self.lock:
                refuse_event = self.event_fails > 0
                self.event_fails -= refuse_event
                held = self.event_hold and f'"reason":"{self.event_hold}"' in (body or b"").decode(errors="replace")
            if held:
                self._note(h, "event held")
                self.events_free.wait()
            if refuse_event:
                self._note(h, "event refused")
                data = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                   "reason": "ServiceUnavailable", "code": 503,
                                   "message": "the server is currently unable to handle the request"}).encode()
                h.send_response(503)
                h.send_header("Content-Type", "application/json")
                h.send_header("Content-Length", str(len(data)))
                h.end_headers()
                h.wfile.write(data)
                return
        retry_after = self._throttled(pod) if pod is not None else None
        if retry_after is not None:
            self._note(h, "throttled")
            data = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "reason": "TooManyRequests", "code": 429,
                               "message": "Too many requests, please try again later."}).encode()
            h.send_response(429)
            h.send_header("Content-Type", "application/json")
            h.send_header("Retry-After", str(retry_after))
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        if h.command == "PATCH" and "/podgroups/" in h.path and h.path.split("?")[0].endswith("/status"):
            if not self.status_free.is_set():
                self._note(h, "status held")
                self.status_free.wait()
                if client_gone(h.connection):
                    self._note(h, "status dropped")
                    h.close_connection = True
                    return
        hdrs = {k: v for k, v in h.headers.items()
                if k.lower() not in ("host", "authorization", "connection", "content-length",
                                     "accept-encoding")}
        hdrs["Authorization"] = "Bearer " + self.api.token
        watch = "watch=1" in h.path or "watch=true" in h.path
        up = self.api.connect(timeout=None if watch else 60)
        try:
            up.request(h.command, h.path, body=body, headers=hdrs)
            r = up.getresponse()
            if twice:
                r.read()
                up.close()
                up = self.api.connect(timeout=60)
                up.request(h.command, h.path, body=body, headers=hdrs)
                r = up.getresponse()
                self._note(h, "sent twice")
            if dropped:
                r.read()
                self._note(h, "answer dropped")
                h.close_connection = True
                return
            if not watch:
                data = r.read()
                if h.command != "GET":
                    self._note(h, f"answered {r.status}")
                if slow:
                    self._note(h, "answer delayed")
                    time.sleep(slow)
                h.send_response(r.status)
                h.send_header("Content-Type", r.getheader("Content-Type", "application/json"))
                h.send_header("Content-Length", str(len(data)))
                h.end_headers()
                h.wfile.write(data)
                return
            pod_watch = h.path.startswith("/api/v1/pods?")
            h.send_response(r.status)
            h.send_header("Content-Type", r.getheader("Content-Type", "application/json"))
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            h.wfile.flush()
            wlock, held, done, buf = threading.Lock(), [], threading.Event(), b""

            def emit(data):
                h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                h.wfile.flush()

            def release():  # held bound pods' events go once unstalled, no later data needed
                while not done.is_set():
                    if self.unstalled.wait(0.2):
                        with wlock:
                            if held and not done.is_set():
                                emit(b"".join(held))
                                held.clear()
                        done.wait(0.1)

            if pod_watch:
                threading.Thread(target=release, daemon=True).start()
            try:
                while True:
                    data = r.read1(65536)
                    if not data:
                        break
                    if not pod_watch:
                        emit(data)
                        continue
                    lines = (buf + data).split(b"\n")
                    buf = lines.pop()
                    with wlock:
                        stalled = not self.unstalled.is_set()
                        out = [] if stalled else held[:]
                        if not stalled:
                            held.clear()
                        for line in lines:
                            (held if stalled and b'"nodeName":"' in line else out).append(line + b"\n")
                        if out:
                            emit(b"".join(out))
                if buf or held:
                    self.unstalled.wait()
                    with wlock:
                        emit(b"".join(held) + buf)
                        held.clear()
            finally:
                done.set()
            h.wfile.write(b"0\r\n\r\n")
            h.close_connection = True
        except (OSError, http.client.HTTPException):
            h.close_connection = True
        finally:
            up.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def http_get(port, path, timeout=2):
    """(status, text) of a GET on the scheduler's own HTTP server, (0, error) when down."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as e:
        return 0, str(e)


def write_kubeconfig(path, server, token, ca=None):
    """A kubeconfig at path for server with a bearer token (and a CA file). Returns path."""
    ca_line = f', certificate-authority: "{ca}"' if ca else ""
    with open(path, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "{server}"{ca_line}}}
users:
- name: u
  user: {{token: "{token}"}}
contexts:
- name: c
  context: {{cluster: c, user: u}}
current-context: c
""")
    return path


class Scheduler:
    """`topogang scheduler` as a child process, its output in a log file."""

    def __init__(self, binary, cluster, name, work, policy, leader_elect=False, env=None, extra=(),
                 kubeconfig=None, identity=None):
        self.name, self.port = name, free_port()
        self.log = os.path.join(work, f"{name}.log")
        args = [binary, "scheduler", "--kubeconfig", kubeconfig or cluster.kubeconfig, "--listen",
                f"127.0.0.1:{self.port}", "--identity", identity or name, "--config", policy]
        if kubeconfig and 'server: "http://' in open(kubeconfig).read():
            args.append("--allow-insecure-http")  # the fault proxy speaks plain http
        if leader_elect:
            args += ["--leader-elect", "--lease", "topogang-system/crash-lease", "--lease-duration", "2"]
        args += list(extra) + os.environ.get("TOPOGANG_SCHED_ARGS", "").split()  # e.g. --v debug
        with open(self.log, "a") as f:
            f.write(f"---- start {time.strftime('%H:%M:%S')} {' '.join(args)}\n")
            f.flush()
            self.proc = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT,
                                         env=dict(os.environ, **(env or {})))

    def alive(self):
        return self.proc.poll() is None

    def readyz(self):
        return http_get(self.port, "/readyz")

    def wait_ready(self, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            st, text = self.readyz()
            if st == 200:
                return text.strip()
            if not self.alive():
                raise RuntimeError(f"scheduler {self.name} exited {self.proc.returncode}; see {self.log}")
            time.sleep(0.05)
        raise RuntimeError(f"scheduler {self.name} not ready after {timeout}s; see {self.log}")

    def is_leader(self):
        return "leader" in self.readyz()[1]

    def kill(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout=20):
        """SIGTERM; returns the exit code (None: had to be killed)."""
        if not self.alive():
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def finish(self, killed_ok=False):
        """Stops it with SIGTERM and fails the test on a nonzero exit or a
        sanitizer report. killed_ok: a scheduler the test already killed on
        purpose is not stopped again."""
        if not (killed_ok and not self.alive()) and self.stop() != 0:
            fail(f"{self.name} exited {self.proc.returncode} after SIGTERM (see {self.log})")
        rep = self.sanitizer_report()
        if rep:
            fail(f"{self.name}: sanitizer report:\n{rep}")

    def sanitizer_report(self):
        text = open(self.log, errors="replace").read()
        for needle in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
            i = text.find(needle)
            if i >= 0:
                return text[max(0, i - 200):i + 800]
        return None


class PodWatch(threading.Thread):
    """Watches the pods of one namespace from a LIST's resourceVersion, and
    again from the last one seen after any break (an API server killed: no
    event is lost while etcd keeps its history; a 410 relists and compares).
    For every pod uid it records the node it was bound to (the first
    spec.nodeName seen; a different one later is a double bind) and whether
    it was deleted, by whom (uids the test deleted are marked first), and
    keeps every node's GPUs in use over time (over-commit at any event is a
    violation). gpus_alloc: allocatable GPUs per node name."""

    def __init__(self, api, ns, gpus_alloc):
        super().__init__(daemon=True)
        self.api, self.ns, self.alloc = api, ns, gpus_alloc
        self.lock = threading.Lock()
        self.pods = {}              # uid -> dict(name, gang, gpus, node, deleted, t_bound, t_deleted)
        self.used = {}              # node -> GPUs of live bound pods
        self.binds = 0              # pods seen going from unbound to bound (or created bound)
        self.by_test = set()        # uids the test deleted (or is deleting)
        self.sched_deletes = []     # (time, gang, pod name, uid, node) deletions the test did not make
        self.violations = []
        self.events = self.relists = self.reconnects = 0
        self.last_event = time.time()
        self.rv = None
        self.stopping = False
        self.synced = threading.Event()

    def deleting(self, uid):
        with self.lock:
            self.by_test.add(uid)

    def _pod(self, obj):
        md, spec = obj["metadata"], obj.get("spec", {})
        gpus = 0
        for c in spec.get("containers", []):
            lim = c.get("resources", {}).get("limits", {})
            gpus += int(lim.get(GPU, "0"))
        return md["uid"], {"name": md["name"], "gang": md.get("labels", {}).get(GROUP_LABEL),
                           "gpus": gpus, "node": None, "deleted": False, "t_bound": None,
                           "t_deleted": None, "terminating": False, "grace": None,
                           "sched_recorded": False}

    def _apply(self, etype, obj):
        uid, fresh = self._pod(obj)
        node = obj.get("spec", {}).get("nodeName") or None
        now = time.time()
        self.events += 1
        self.last_event = now
        p = self.pods.setdefault(uid, fresh)
        if node and p["node"] and node != p["node"]:
            self.violations.append(f"pod {p['name']} ({uid}) bound twice: {p['node']} then {node}")
        if node and not p["node"] and not p["deleted"]:
            p["node"], p["t_bound"] = node, now
            self.binds += 1
            self.used[node] = self.used.get(node, 0) + p["gpus"]
            if self.used[node] > self.alloc.get(node, 0):
                self.violations.append(
                    f"node {node} over-committed: {self.used[node]} GPUs of {self.alloc.get(node, 0)} "
                    f"in use once {p['name']} was bound")
        md = obj.get("metadata", {})
        if md.get("deletionTimestamp") and not p["terminating"] and not p["deleted"]:
            # a DELETE of a bound pod is two writes in the API server: the
            # deletionTimestamp (with the grace period), then, for grace 0, the
            # removal; a client gone between them (a scheduler killed
            # mid-rollback) leaves the pod Terminating until its kubelet ends it
            p["terminating"], p["grace"] = True, md.get("deletionGracePeriodSeconds")
            if uid not in self.by_test and p["node"]:
                self.sched_deletes.append((now, p["gang"], p["name"], uid, p["node"]))
                p["sched_recorded"] = True
        if etype == "DELETED" and not p["deleted"]:
            p["deleted"], p["t_deleted"] = True, now
            if p["node"]:
                self.used[p["node"]] -= p["gpus"]
            if uid not in self.by_test and not p["sched_recorded"]:
                if p["node"]:
                    self.sched_deletes.append((now, p["gang"], p["name"], uid, p["node"]))
                else:
                    self.violations.append(f"unbound pod {p['name']} deleted by someone else than the test")

    def _list(self):
        doc = self.api.must("GET", f"/api/v1/namespaces/{self.ns}/pods")
        with self.lock:
            seen = set()
            for obj in doc.get("items", []):
                seen.add(obj["metadata"]["uid"])
                self._apply("ADDED", obj)
            if self.rv is not None:  # a relist after 410: what went meanwhile
                for uid, p in self.pods.items():
                    if uid not in seen and not p["deleted"]:
                        self._apply("DELETED", {"metadata": {"uid": uid, "name": p["name"]}})
            self.rv = doc["metadata"]["resourceVersion"]
        self.synced.set()

    def _watch(self):
        conn = self.api.connect(timeout=90)
        try:
            q = urllib.parse.urlencode({"watch": "1", "resourceVersion": self.rv,
                                        "allowWatchBookmarks": "true", "timeoutSeconds": "60"})
            conn.request("GET", f"/api/v1/namespaces/{self.ns}/pods?{q}", headers=self.api.headers())
            r = conn.getresponse()
            if r.status != 200:
                r.read()
                raise OSError(f"watch: HTTP {r.status}")
            for line in r:
                if self.stopping:
                    return
                ev = json.loads(line)
                if ev["type"] == "ERROR":
                    if ev["object"].get("code") == 410:
                        self.relists += 1
                        self._list()
                    return
                with self.lock:
                    if ev["type"] != "BOOKMARK":
                        self._apply(ev["type"], ev["object"])
                    self.rv = ev["object"]["metadata"]["resourceVersion"]
        finally:
            conn.close()

    def run(self):
        while not self.stopping:
            try:
                if self.rv is None:
                    self._list()
                self._watch()
            except (OSError, http.client.HTTPException, ValueError, RuntimeError):
                if self.stopping:
                    return
                self.reconnects += 1
                time.sleep(0.2)

    # ---- questions (under the lock) ----

    def _alive(self, gang, terminating):
        """The records of a gang's pods not deleted (terminating=False: nor Terminating); lock held."""
        return [p for p in self.pods.values() if p["gang"] == gang and not p["deleted"]
                and (terminating or not p["terminating"])]

    def bound_of(self, gang, terminating=True):
        """Bound pods of a gang not deleted (terminating=False: nor Terminating)."""
        with self.lock:
            return sum(1 for p in self._alive(gang, terminating) if p["node"])

    def live_of(self, gang, terminating=True):
        with self.lock:
            return [p["name"] for p in self._alive(gang, terminating)]

    def ending(self):
        """(uid, name) of the pods Terminating with grace 0: a kubelet ends them at once."""
        with self.lock:
            return [(u, p["name"]) for u, p in self.pods.items()
                    if p["terminating"] and not p["deleted"] and p["grace"] == 0]

    def uids_of(self, gang):
        with self.lock:
            return [(u, p["name"]) for u, p in self.pods.items() if p["gang"] == gang and not p["deleted"]]

    def wait_seen(self, names, timeout=30):
        """Until every pod name in `names` has been seen by the watch."""
        end = time.time() + timeout
        names = set(names)
        while time.time() < end:
            with self.lock:
                have = {p["name"] for p in self.pods.values() if not p["deleted"]}
            if names <= have:
                return True
            time.sleep(0.05)
        return False


def podgroup(ns, name, min_member, required=None, timeout_s=None):
    spec = {"minMember": min_member}
    if required:
        spec["topology"] = {"required": required}
    if timeout_s:
        spec["scheduleTimeoutSeconds"] = timeout_s
    return {"apiVersion": "topogang.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def gang_pod(ns, name, group, gpus):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {GROUP_LABEL: group}},
            "spec": {"schedulerName": "topogang", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"limits": {GPU: str(gpus)}}}]}}


def setup_cluster(cluster, api, src, nodes=32, rack_size=4, blocks=2):
    """The PodGroup CRD, the topogang-system namespace and fake GPU nodes
    (8 GPUs each). Returns {node name: GPUs}."""
    cluster.kubectl_apply(os.path.join(src, "manifests/crd-podgroup.yaml"))
    for _ in range(100):
        st, doc = api.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.topogang.io")
        st = (doc or {}).get("status") if st == 200 else None
        conds = {c["type"]: c["status"] for c in ((st if isinstance(st, dict) else {}).get("conditions") or [])}
        if conds.get("Established") == "True":
            break
        time.sleep(0.1)
    api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": "topogang-system"}})
    out = subprocess.check_output([os.path.join(src, "scripts/fake-nodes"), "--nodes", str(nodes),
                                   "--zones", "1", "--blocks", str(blocks),
                                   "--rack-size", str(rack_size), "--clique-size", "2"])
    alloc = {}
    for n in json.loads(out)["items"]:
        st, _ = api.request("POST", "/api/v1/nodes", n)
        if st not in (201, 409):
            raise RuntimeError(f"creating node {n['metadata']['name']}: HTTP {st}")
        alloc[n["metadata"]["name"]] = int(n["status"]["allocatable"][GPU])
    return alloc


def make_namespace(api, ns):
    api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": ns}})
    # the default ServiceAccount is not needed: cluster-up turns that admission off


failures = []  # the python suites' failed checks of the case running (run_cases counts them)


def blocker_pod(api, ns, node):
    """Creates a pod of another scheduler holding all 8 GPUs of node; returns its name."""
    p = gang_pod(ns, f"blk-{node}", None, 8)
    del p["metadata"]["labels"]
    del p["spec"]["schedulerName"]
    p["spec"]["nodeName"] = node
    api.create_pod(ns, p)
    return p["metadata"]["name"]


def wipe_pods(api, ns, wait_empty=True):
    """Deletes every pod of namespace ns; waits until none is left."""
    for p in api.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]:
        api.delete_pod(ns, p["metadata"]["name"])
    if wait_empty:
        wait(lambda: not api.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"], 30, f"{ns} empty")


def fail(msg):
    log(f"    FAIL: {msg}")
    failures.append(msg)


def wait(pred, timeout, what, step=0.2):
    """pred() true within timeout seconds (polled every step), else a failure."""
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    fail(f"timed out after {timeout} s waiting for: {what}")
    return False


def run_cases(name, cases, policy, nodes=32, rack_size=4, blocks=2):
    """The python e2e suites' runner: one control plane (argv[1] names one to
    reuse; "" or none: a new one), the fake GPU nodes, then each case of
    cases (argv[2:] or TOPOGANG_CASES=a,b: only those) with a fresh ctx
    ({api, cluster, bin, work, policy, scheds, proxies, alloc}); the
    schedulers (resumed if stopped) and fault proxies a case left are ended
    after it. A case fails when it called fail() or raised. policy
    is the policy file's text. Counts like cmocka; returns the exit status
    (77: no control plane, SKIP)."""
    import shutil
    import tempfile
    src = os.environ.get("TOPOGANG_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
    binary = os.environ.get("TOPOGANG_BIN") or os.path.join(src, "build/topogang")
    work = tempfile.mkdtemp(prefix=f"tg-e2e-{name}.")
    reuse = (sys.argv[1] if len(sys.argv) > 1 else None) or None
    only = sys.argv[2:] or [c for c in os.environ.get("TOPOGANG_CASES", "").split(",") if c]
    try:
        cluster = Cluster(src, work, reuse)
    except Skip as e:
        log(f"SKIP: {e}")
        return 77
    api = Api(cluster)
    path = os.path.join(work, "policy.yaml")
    with open(path, "w") as f:
        f.write(policy)
    ctx = {"api": api, "cluster": cluster, "bin": binary, "work": work, "policy": path, "scheds": [],
           "proxies": []}

    def end_case():
        for s in ctx["scheds"]:
            if s.alive():
                s.proc.send_signal(signal.SIGCONT)  # a case may have left one stopped
            s.kill()
        for px in ctx["proxies"]:
            px.close()
        ctx["scheds"], ctx["proxies"] = [], []

    passed = failed = 0
    try:
        ctx["alloc"] = setup_cluster(cluster, api, src, nodes=nodes, rack_size=rack_size, blocks=blocks)
        for c in cases:
            case = c.__name__[5:]
            if only and case not in only:
                continue
            log(f"[ RUN      ] {case}")
            before = len(failures)
            try:
                c(ctx)
            except Exception as e:  # noqa: BLE001
                fail(f"{type(e).__name__}: {e}")
            end_case()
            if len(failures) == before:
                passed += 1
                log(f"[       OK ] {case}")
            else:
                failed += 1
                log(f"[  FAILED  ] {case}")
    finally:
        end_case()
        cluster.down()
    log(f"[==========] {passed + failed} test(s) run.")
    log(f"[  PASSED  ] {passed} test(s).")
    if failed:
        log(f"[  FAILED  ] {failed} test(s)")
        log(f"logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0
