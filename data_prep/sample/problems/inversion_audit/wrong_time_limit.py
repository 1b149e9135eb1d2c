# expected_verdict: time_limit
# needs_large_tests: true
# note: the naive O(N^2) double loop: 2 * 10^6 steps on the committed N = 2000 test, 2 * 10^10 on the large
# N = 2 * 10^5 test (minutes on any machine; the limit is 15 s).
n = int(input())
values = list(map(int, input().split()))
inversions = 0
for i in range(n):
    for j in range(i + 1, n):
        if values[i] > values[j]:
            inversions += 1
print(inversions)
