# expected_verdict: time_limit
# note: brute force over every (left, right) span, taking the minimum of each slice again: O(n^3). On the n = 20000
# test that is 2 * 10^8 slices of about 6,700 heights each (over 10^12 comparisons, hours on any machine).
class Solution:
    def largestBillboard(self, heights):
        best = 0
        for left in range(len(heights)):
            for right in range(left, len(heights)):
                best = max(best, min(heights[left : right + 1]) * (right - left + 1))
        return best
