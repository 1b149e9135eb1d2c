# expected_verdict: accepted
# note: recursive depth-first search without raising the recursion limit, 5000 calls deep on the chain test:
# past CPython's default limit (1000), within the 50,000 that LiveCodeBench's judge sets before every program.
n = int(input())
children = [[] for _ in range(n + 1)]
if n >= 2:
    parents = list(map(int, input().split()))
    weights = list(map(int, input().split()))
    for camp in range(2, n + 1):
        children[parents[camp - 2]].append((camp, weights[camp - 2]))
best = 0


def deepest(camp):
    global best
    top_two = [0, 0]
    for child, weight in children[camp]:
        top_two.append(deepest(child) + weight)
        top_two = sorted(top_two)[-2:]
    best = max(best, top_two[0] + top_two[1])
    return top_two[1]


deepest(1)
print(best)
