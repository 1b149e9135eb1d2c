# expected_verdict: time_limit
# needs_large_tests: true
# note: O(N^2) Dijkstra that scans every depot for the closest one: passes N = 1000, but the large N = 10^5 test
# takes 10^10 scan steps (minutes on any machine; the limit is 15 s).
import sys

data = sys.stdin.buffer.read().split()
n, m = int(data[0]), int(data[1])
roads = [[] for _ in range(n + 1)]
for j in range(m):
    roads[int(data[2 + 3 * j])].append((int(data[3 + 3 * j]), int(data[4 + 3 * j])))
INFINITE = float("inf")
best = [INFINITE] * (n + 1)
best[1] = 0
done = [False] * (n + 1)
for _ in range(n):
    depot, closest = -1, INFINITE
    for candidate in range(1, n + 1):
        if not done[candidate] and best[candidate] < closest:
            depot, closest = candidate, best[candidate]
    if depot == -1:
        break
    done[depot] = True
    for nxt, minutes in roads[depot]:
        best[nxt] = min(best[nxt], closest + minutes)
print(" ".join(str(-1 if value == INFINITE else value) for value in best[1:]))
