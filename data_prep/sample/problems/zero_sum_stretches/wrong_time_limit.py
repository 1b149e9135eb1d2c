# expected_verdict: time_limit
# note: brute force over every stretch, summing each slice again: O(N^3). On the N = 20000 test that is 2 * 10^8
# slices of about 6,700 values each (over 10^12 additions, hours on any machine; the limit is 15 s).
n, k = map(int, input().split())
values = list(map(int, input().split()))
stretches = 0
for left in range(n):
    for right in range(left, n):
        if sum(values[left : right + 1]) == k:
            stretches += 1
print(stretches)
