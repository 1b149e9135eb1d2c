# expected_verdict: runtime_error
# note: recursive depth-first search with the default recursion limit: RecursionError on the 5000-camp chain.
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
