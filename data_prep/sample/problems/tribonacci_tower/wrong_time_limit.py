# expected_verdict: time_limit
# note: walks the recurrence one floor at a time, modulo 10^9 + 7: O(n) per question, 10^18 steps on the tests with
# n = 10^18 (centuries on any machine; the limit is 15 s).
MOD = 10**9 + 7
for _ in range(int(input())):
    floor = int(input())
    windows, next_windows, after_next = 0, 1, 1
    for _ in range(floor):
        windows, next_windows, after_next = next_windows, after_next, (windows + next_windows + after_next) % MOD
    print(windows)
