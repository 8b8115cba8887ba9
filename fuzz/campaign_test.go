package fuzz

import "testing"

// TestShardsPartitionTheCampaign checks that shards of a campaign run each
// of its cases once between them, and each shard its cases in index order.
func TestShardsPartitionTheCampaign(t *testing.T) {
	for _, c := range []struct{ cases, shards int }{{10, 1}, {10, 2}, {10, 3}, {7, 7}, {3, 5}, {0, 2}, {2000, 4}} {
		seen := make([]int, c.cases)
		for shard := 1; shard <= c.shards; shard++ {
			n, index := shardCases(c.cases, shard, c.shards)
			for i := 0; i < n; i++ {
				k := index(i)
				if k < 0 || k >= c.cases || i > 0 && k <= index(i-1) {
					t.Fatalf("%d cases, shard %d of %d: case %d at %d", c.cases, shard, c.shards, k, i)
				}
				seen[k]++
			}
		}
		for k, times := range seen {
			if times != 1 {
				t.Errorf("%d cases in %d shards: case %d ran %d times", c.cases, c.shards, k, times)
			}
		}
	}
}
