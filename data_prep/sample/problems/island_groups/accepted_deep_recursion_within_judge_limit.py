# expected_verdict: accepted
# note: recursive find without path compression, as deep as the longest chain of bridges: past CPython's
# default recursion limit (1000), within the 50,000 that LiveCodeBench's judge sets before every program.
import sys

data = sys.stdin.buffer.read().split()
n, m = int(data[0]), int(data[1])
parent = list(range(n + 1))


def find(node: int) -> int:
    return node if parent[node] == node else find(parent[node])


for j in range(m):
    a, b = find(int(data[2 + 2 * j])), find(int(data[3 + 2 * j]))
    if a != b:
        parent[a] = b
roots = [find(node) for node in range(1, n + 1)]
print(len(set(roots)), max(roots.count(root) for root in set(roots)))
