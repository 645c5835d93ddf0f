//! Pages sorted by a weighted degree in O(n), as HMM-V sorts VM pages (§4.2): the
//! page degree is `read_weight · reads + write_weight · writes` (1 and 3 from the
//! Optane latencies of HMM-V Table 2), an integer of bounded range, so a bucket sort
//! orders any number of pages in one pass over them and one over the buckets.

/// A page's degree: `read_weight · reads + write_weight · writes`.
pub fn degree(reads: u64, writes: u64, read_weight: u64, write_weight: u64) -> u64 {
    read_weight * reads + write_weight * writes
}

/// Sorts `items` by degree, highest first, in O(n + max degree + 1) time; items of
/// equal degree keep their order. Degrees above `max_degree` count as `max_degree`.
pub fn sort_by_degree<T: Copy>(items: &[(T, u64)], max_degree: u64) -> Vec<T> {
    let buckets = max_degree as usize + 1;
    let mut count = vec![0usize; buckets + 1];
    for &(_, d) in items {
        count[buckets - 1 - d.min(max_degree) as usize + 1] += 1;
    }
    for b in 1..=buckets {
        count[b] += count[b - 1];
    }
    let mut out: Vec<Option<T>> = vec![None; items.len()];
    for &(item, d) in items {
        let slot = &mut count[buckets - 1 - d.min(max_degree) as usize];
        out[*slot] = Some(item);
        *slot += 1;
    }
    out.into_iter().map(|x| x.expect("every slot filled")).collect()
}

/// The hot set: the first `k` items by degree (HMM-V §4.2: the pages that fill the
/// VM's DRAM), hottest first.
pub fn hottest<T: Copy>(items: &[(T, u64)], max_degree: u64, k: usize) -> Vec<T> {
    let mut all = sort_by_degree(items, max_degree);
    all.truncate(k);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degree_weighs_writes_three_times() {
        // HMM-V §4.2 with Optane's weights: 4 reads and 2 writes → 4 + 6 = 10.
        assert_eq!(degree(4, 2, 1, 3), 10);
    }

    #[test]
    fn sorts_highest_first_keeping_ties_in_order() {
        let items = [('a', 3), ('b', 9), ('c', 3), ('d', 0), ('e', 12), ('f', 9)];
        // 12 clamps to the maximum 10 and still sorts first.
        assert_eq!(sort_by_degree(&items, 10), vec!['e', 'b', 'f', 'a', 'c', 'd']);
        assert_eq!(hottest(&items, 10, 3), vec!['e', 'b', 'f']);
        assert!(sort_by_degree::<u8>(&[], 5).is_empty());
    }
}
