"""Inputs and load for tiersim's real-program suite (`tiersim record --suite`).

`tiersim` carries this file, writes it into the suite's work directory and runs it
with /usr/bin/python3 (Debian's, which finds python3-numpy, python3-scipy and
python3-igraph) in three roles:

- preparing a program's input before the recording (not recorded): `text`,
  `sqlite`, `csource`, `kronecker`;
- the recorded program itself for the numeric and graph workloads: `dgemm`, `lu`,
  `cg`, `bfs`, `pagerank` (QEMU records this Python process, its OpenBLAS threads
  as cores);
- the load against a recorded server, from a separate process that is not
  recorded: `redis`, `memcached` (a YCSB-like load: insert every record, then
  zipfian-chosen reads and updates), which ends by shutting the server down.

Every size is in bytes: the data the program holds, as the suite's `--size` gives
it. Every random choice comes from the seed, so inputs are the same run to run.
"""

import itertools
import os
import random
import socket
import sys
import time

# YCSB's record: 10 fields of 100 bytes; one value of that size per key here.
VALUE_BYTES = 1000
# YCSB's default zipfian constant.
ZIPF_THETA = 0.99


def words(rng, n):
    """A vocabulary of n pseudo-words, 2 to 12 letters."""
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    return ["".join(rng.choice(letters[: 6 + (i % 20)]) for _ in range(2 + (i * 7919) % 11)) for i in range(n)]


def text(out, size, seed):
    """Writes `size` bytes of log-like text: zipfian-frequent words and numbers,
    which compress about as logs do (xz -1 about 2.9 : 1)."""
    rng = random.Random(seed)
    vocab = words(rng, 20000)
    cum = list(itertools.accumulate(1.0 / (i + 1) for i in range(len(vocab))))
    written = 0
    line_no = 0
    with open(out, "w") as f:
        while written < size:
            block = []
            picked = rng.choices(vocab, cum_weights=cum, k=512 * 16)
            for i in range(512):
                line_no += 1
                n = rng.randint(4, 16)
                block.append(f"{line_no} {rng.getrandbits(20):x} " + " ".join(picked[i * 16 : i * 16 + n]))
            chunk = "\n".join(block) + "\n"
            chunk = chunk[: size - written]
            f.write(chunk)
            written += len(chunk)


def sqlite(db, queries, size, seed):
    """Builds an SQLite database of about `size` bytes (a table of orders with an
    index on the customer) and the query script the recorded sqlite3 runs: point
    lookups, range scans, an aggregate over the whole table and a batch of
    updates, with a page cache as large as the database."""
    import sqlite3

    rng = random.Random(seed)
    row_bytes = 140
    rows = max(1000, size // row_bytes)
    customers = max(100, rows // 20)
    if os.path.exists(db):
        os.remove(db)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER, amount REAL, status TEXT, note TEXT)")
    statuses = ["new", "paid", "shipped", "returned"]
    batch = []
    for i in range(rows):
        batch.append((i, rng.randrange(customers), rng.random() * 1000, rng.choice(statuses), "%080x" % rng.getrandbits(320)))
        if len(batch) == 10000:
            con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", batch)
            batch.clear()
    con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", batch)
    con.execute("CREATE INDEX orders_customer ON orders(customer)")
    con.commit()
    con.close()
    cache_kib = size // 1024 + 1024
    lookups = max(200, rows // 50)
    with open(queries, "w") as f:
        f.write(f"PRAGMA cache_size=-{cache_kib};\nPRAGMA journal_mode=OFF;\n")
        f.write("SELECT status, count(*), sum(amount) FROM orders GROUP BY status;\n")
        f.write("BEGIN;\n")
        for _ in range(lookups):
            f.write(f"SELECT count(*), max(amount) FROM orders WHERE customer = {rng.randrange(customers)};\n")
            start = rng.randrange(rows)
            f.write(f"SELECT sum(amount) FROM orders WHERE id BETWEEN {start} AND {start + 100};\n")
        for _ in range(lookups // 4):
            f.write(f"UPDATE orders SET status = 'paid', amount = amount + 1 WHERE id = {rng.randrange(rows)};\n")
        f.write("COMMIT;\n")
        f.write("SELECT customer, count(*) FROM orders GROUP BY customer ORDER BY 2 DESC LIMIT 5;\n")


def csource(out, size, seed):
    """Writes one self-contained C translation unit for cc1 (no #include): `size`
    is the memory cc1 takes, about 256 KiB per generated function at -O2 (a loop
    nest, a switch and arithmetic each), measured with GCC 12."""
    rng = random.Random(seed)
    functions = max(1, size // (256 << 10))
    with open(out, "w") as f:
        f.write("typedef unsigned long u64;\nextern u64 sink(u64);\n")
        for i in range(functions):
            a, b, c = rng.randrange(1, 97), rng.randrange(1, 89), rng.randrange(3, 17)
            f.write(f"u64 f{i}(const u64 *x, u64 n, u64 k) {{\n  u64 acc = {a}, t = k;\n")
            f.write(f"  for (u64 i = 0; i < n; i++) {{\n    for (u64 j = 0; j < {c}; j++) {{\n")
            f.write(f"      t = t * {b} + x[(i + j) % n];\n      acc ^= (t >> {c}) + j;\n    }}\n")
            f.write("    switch ((acc + i) & 7) {\n")
            for case in range(8):
                f.write(f"    case {case}: acc += x[i] * {rng.randrange(1, 1000)} + (t << {case}); break;\n")
            f.write("    }\n  }\n")
            if i > 0:
                f.write(f"  if (acc & 1) acc += f{rng.randrange(i)}(x, n / 2, acc);\n")
            f.write("  return sink(acc);\n}\n")


def kronecker_edges(scale, edgefactor, seed):
    """Graph500's Kronecker generator (R-MAT with A=0.57, B=0.19, C=0.19), as
    Graph500's reference code: 2^scale vertices, edgefactor·2^scale edges, the
    vertex labels permuted. Returns an (m, 2) int64 array."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n, m = 1 << scale, edgefactor << scale
    a, b, c = 0.57, 0.19, 0.19
    ab, c_norm, a_norm = a + b, c / (1 - (a + b)), a / (a + b)
    ij = np.zeros((2, m), dtype=np.int64)
    for bit in range(scale):
        ii = rng.random(m) > ab
        jj = rng.random(m) > (c_norm * ii + a_norm * ~ii)
        ij[0] += ii.astype(np.int64) << bit
        ij[1] += jj.astype(np.int64) << bit
    perm = rng.permutation(n)
    return perm[ij].T.copy()


def graph_scale(size):
    """The smallest Kronecker scale (edge factor 16, undirected) whose run takes at
    least `size` bytes: the process's peak grows by about 2.9 KB a vertex (181 bytes
    an edge: the edge list, its conversion and igraph's indices), measured with
    python-igraph 0.10.2 at scales 16 and 17; 10 at least."""
    scale = 10
    while (2900 << scale) < size:
        scale += 1
    return scale


def kronecker(out, size, seed):
    """Writes the edge list of a Kronecker graph of about `size` bytes (.npy)."""
    import numpy as np

    scale = graph_scale(size)
    np.save(out, kronecker_edges(scale, 16, seed))
    print(f"kronecker: scale {scale}, {16 << scale} edges")


def load_graph(path):
    import igraph
    import numpy as np

    edges = np.load(path)
    n = int(edges.max()) + 1
    return igraph.Graph(n=n, edges=edges, directed=False), n


def bfs(path, seed):
    """Breadth-first searches from 8 random roots, as Graph500's kernel 2."""
    g, n = load_graph(path)
    rng = random.Random(seed)
    reached = 0
    for _ in range(8):
        root = rng.randrange(n)
        while g.degree(root) == 0:
            root = rng.randrange(n)
        order, _, _ = g.bfs(root)
        reached += len(order)
    print(f"bfs: {n} vertices, {g.ecount()} edges, {reached} reached from 8 roots")


def pagerank(path):
    """PageRank to igraph's default tolerance (PRPACK)."""
    g, n = load_graph(path)
    ranks = g.pagerank()
    print(f"pagerank: {n} vertices, {g.ecount()} edges, top rank {max(ranks):.3g}")


def dgemm(size, seed):
    """C = A·B on n×n doubles, three matrices of `size` bytes together (OpenBLAS's
    DGEMM, its threads as cores)."""
    import numpy as np

    n = max(64, int((size / 24) ** 0.5))
    rng = np.random.default_rng(seed)
    a, b = rng.random((n, n)), rng.random((n, n))
    c = a @ b
    print(f"dgemm: n={n}, trace(C)={np.trace(c):.6g}")


def lu(size, seed):
    """Solves A·x = b with LU factorisation and partial pivoting (LAPACK dgesv),
    as HPL does, on an n×n matrix of `size` bytes."""
    import numpy as np

    n = max(64, int((size / 8) ** 0.5))
    rng = np.random.default_rng(seed)
    a = rng.random((n, n))
    b = rng.random(n)
    x = np.linalg.solve(a, b)
    print(f"lu: n={n}, residual {np.linalg.norm(a @ x - b):.3g}")


def cg(size, seed):
    """Conjugate gradient on a random sparse symmetric positive definite matrix,
    as NPB CG (about 13 nonzeros a row, its 12-byte entries and the vectors
    making `size` bytes): 25 iterations, as NPB's inner loop."""
    import numpy as np
    import scipy.sparse as sp
    import scipy.sparse.linalg as spl

    per_row = 13
    n = max(1000, size // (per_row * 12 * 2 + 64))
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), per_row // 2)
    cols = rng.integers(0, n, rows.size)
    vals = rng.random(rows.size)
    m = sp.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr()
    m = m + m.T + sp.identity(n, format="csr") * (per_row + 1.0)
    b = rng.random(n)
    x, _ = spl.cg(m, b, maxiter=25)
    print(f"cg: n={n}, nnz={m.nnz}, |x|={np.linalg.norm(x):.6g}")


class Zipfian:
    """YCSB's scrambled zipfian generator over [0, n): Gray et al.'s method with
    YCSB's constant 0.99, the item then hashed (FNV-1a 64) so that the popular
    keys spread over the key space, as YCSB's ScrambledZipfianGenerator does."""

    def __init__(self, n, rng):
        self.n, self.rng = n, rng
        theta = ZIPF_THETA
        zetan = sum(1.0 / (i ** theta) for i in range(1, n + 1))
        zeta2 = 1.0 + 0.5 ** theta
        self.theta, self.zetan = theta, zetan
        self.alpha = 1.0 / (1.0 - theta)
        self.eta = (1 - (2.0 / n) ** (1 - theta)) / (1 - zeta2 / zetan)

    def next(self):
        u = self.rng.random()
        uz = u * self.zetan
        if uz < 1.0:
            item = 0
        elif uz < 1.0 + 0.5 ** self.theta:
            item = 1
        else:
            item = int(self.n * (self.eta * u - self.eta + 1) ** self.alpha)
        return fnv(item) % self.n


def fnv(x):
    h = 0xCBF29CE484222325
    for _ in range(8):
        h ^= x & 0xFF
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        x >>= 8
    return h


def connect(port, timeout=120.0):
    """Connects to the server on 127.0.0.1:port, waiting for it to start (QEMU
    takes a moment to bring it up)."""
    deadline = time.time() + timeout
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=600)
        except OSError:
            if time.time() > deadline:
                sys.exit(f"driver: no server on 127.0.0.1:{port} after {timeout:.0f} s")
            time.sleep(0.1)


class Replies:
    """Reads a server's replies off a socket."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def line(self):
        while b"\r\n" not in self.buf:
            data = self.sock.recv(1 << 20)
            if not data:
                sys.exit("driver: the server closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exactly(self, n):
        while len(self.buf) < n:
            data = self.sock.recv(1 << 20)
            if not data:
                sys.exit("driver: the server closed the connection")
            self.buf += data
        data, self.buf = self.buf[:n], self.buf[n:]
        return data


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def redis_reply(r):
    """Reads one RESP reply; fails on an error reply."""
    line = r.line()
    kind = line[:1]
    if kind == b"-":
        sys.exit(f"driver: redis answered {line.decode(errors='replace')}")
    if kind == b"$":
        n = int(line[1:])
        if n >= 0:
            r.exactly(n + 2)


def ycsb_plan(size, seed):
    """The keys, the value and the operations of a YCSB-like load on `size` bytes:
    every record inserted, then as many operations, 95 % reads and 5 % updates
    (YCSB workload B) of zipfian-chosen keys."""
    rng = random.Random(seed)
    records = max(1000, size // (VALUE_BYTES + 100))
    value = bytes(rng.randrange(97, 123) for _ in range(VALUE_BYTES))
    zipf = Zipfian(records, rng)
    ops = [(rng.random() < 0.05, zipf.next()) for _ in range(records)]
    return records, value, ops


def key(i):
    return b"user%012d" % i


def redis(port, size, seed):
    records, value, ops = ycsb_plan(size, seed)
    sock = connect(port)
    r = Replies(sock)
    pipeline = 64
    for start in range(0, records, pipeline):
        n = min(pipeline, records - start)
        sock.sendall(b"".join(resp(b"SET", key(i), value) for i in range(start, start + n)))
        for _ in range(n):
            redis_reply(r)
    for start in range(0, len(ops), pipeline):
        chunk = ops[start : start + pipeline]
        sock.sendall(b"".join(resp(b"SET", key(k), value) if update else resp(b"GET", key(k)) for update, k in chunk))
        for _ in chunk:
            redis_reply(r)
    sock.sendall(resp(b"SHUTDOWN", b"NOSAVE"))
    sock.close()
    print(f"redis load: {records} records inserted, {len(ops)} operations")


def memcached(port, size, seed):
    records, value, ops = ycsb_plan(size, seed)
    sock = connect(port)
    r = Replies(sock)
    pipeline = 64

    def set_cmd(k):
        return b"set %s 0 0 %d\r\n%s\r\n" % (key(k), len(value), value)

    for start in range(0, records, pipeline):
        n = min(pipeline, records - start)
        sock.sendall(b"".join(set_cmd(i) for i in range(start, start + n)))
        for _ in range(n):
            if r.line() != b"STORED":
                sys.exit("driver: memcached did not store a record")
    for start in range(0, len(ops), pipeline):
        chunk = ops[start : start + pipeline]
        sock.sendall(b"".join(set_cmd(k) if update else b"get %s\r\n" % key(k) for update, k in chunk))
        for update, _ in chunk:
            if update:
                r.line()
                continue
            line = r.line()
            while line != b"END":
                if line.startswith(b"VALUE"):
                    r.exactly(int(line.split()[3]) + 2)
                line = r.line()
    sock.sendall(b"shutdown\r\n")
    sock.close()
    print(f"memcached load: {records} records inserted, {len(ops)} operations")


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: driver.py ROLE ARGS… (see the module's doc string)")
    role, args = argv[1], argv[2:]
    roles = {
        "text": lambda: text(args[0], int(args[1]), int(args[2])),
        "sqlite": lambda: sqlite(args[0], args[1], int(args[2]), int(args[3])),
        "csource": lambda: csource(args[0], int(args[1]), int(args[2])),
        "kronecker": lambda: kronecker(args[0], int(args[1]), int(args[2])),
        "bfs": lambda: bfs(args[0], int(args[1])),
        "pagerank": lambda: pagerank(args[0]),
        "dgemm": lambda: dgemm(int(args[0]), int(args[1])),
        "lu": lambda: lu(int(args[0]), int(args[1])),
        "cg": lambda: cg(int(args[0]), int(args[1])),
        "redis": lambda: redis(int(args[0]), int(args[1]), int(args[2])),
        "memcached": lambda: memcached(int(args[0]), int(args[1]), int(args[2])),
    }
    if role not in roles:
        sys.exit(f"driver.py: unknown role {role} (known: {', '.join(roles)})")
    roles[role]()


if __name__ == "__main__":
    main(sys.argv)
