//! The Merkle tree over the audit records, computed from stored hashes.
//!
//! Every computation of `tlog_tiles` reads stored hashes through a synchronous reader,
//! and which hashes it reads depends only on the tree sizes and leaf indexes involved,
//! never on the hashes' values. So each operation here comes in two halves: `needed_*`
//! runs the computation against a reader that only records what is asked for, the
//! caller fetches exactly those hashes (from the control database, asynchronously), and
//! the operation itself runs against what was fetched.

use std::cell::RefCell;
use std::collections::HashMap;

use tlog_tiles::tlog::{self, HashReader};

pub use tlog_tiles::tlog::Hash;

/// Stored hashes by their index in the `sumdb/tlog` layout.
pub type Known = HashMap<u64, Hash>;

/// Why a tree computation could not be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("the stored hash {0} is missing")]
    Missing(u64),
    #[error("{0}")]
    Invalid(String),
}

impl From<tlog::Error> for TreeError {
    fn from(e: tlog::Error) -> Self {
        TreeError::Invalid(e.to_string())
    }
}

/// The leaf hash of a record: RFC 6962's hash of its chain hash.
pub fn leaf(chain_hash: &[u8]) -> Hash {
    tlog::record_hash(chain_hash)
}

/// The index of leaf `n`'s own stored hash.
pub fn leaf_index(n: u64) -> u64 {
    tlog::stored_hash_index(0, n)
}

/// Records every index asked for and answers zeros.
#[derive(Default)]
struct Recorder(RefCell<Vec<u64>>);

impl HashReader for Recorder {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog::Error> {
        self.0.borrow_mut().extend_from_slice(indexes);
        Ok(vec![Hash([0; 32]); indexes.len()])
    }
}

/// Answers from fetched hashes, then from hashes computed in this batch.
struct Reader<'a> {
    known: &'a Known,
    batch: &'a Known,
}

impl HashReader for Reader<'_> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog::Error> {
        indexes
            .iter()
            .map(|i| {
                self.known
                    .get(i)
                    .or_else(|| self.batch.get(i))
                    .copied()
                    .ok_or_else(|| tlog::Error::InvalidInput(format!("stored hash {i} is missing")))
            })
            .collect()
    }
}

fn recorded(run: impl FnOnce(&Recorder) -> Result<(), tlog::Error>) -> Vec<u64> {
    let recorder = Recorder::default();
    // The recorder never fails; the index math is checked again by the real run.
    let _ = run(&recorder);
    let mut indexes = recorder.0.into_inner();
    indexes.sort_unstable();
    indexes.dedup();
    indexes
}

fn reader(known: &Known) -> Reader<'_> {
    static EMPTY: std::sync::OnceLock<Known> = std::sync::OnceLock::new();
    Reader {
        known,
        batch: EMPTY.get_or_init(Known::new),
    }
}

/// The stored hashes (below the first new one) that appending leaves `size..size + count`
/// reads.
pub fn needed_for_append(size: u64, count: u64) -> Vec<u64> {
    let first_new = tlog::stored_hash_index(0, size);
    recorded(|r| {
        for n in size..size + count {
            tlog::stored_hashes_for_record_hash(n, Hash([0; 32]), r)?;
        }
        Ok(())
    })
    .into_iter()
    .filter(|i| *i < first_new)
    .collect()
}

/// The stored hashes to add when the tree of `size` leaves grows by `leaves`, by index.
pub fn append(size: u64, leaves: &[Hash], known: &Known) -> Result<Vec<(u64, Hash)>, TreeError> {
    let mut batch = Known::new();
    let mut added = Vec::new();
    for (n, leaf) in (size..).zip(leaves) {
        let r = Reader {
            known,
            batch: &batch,
        };
        let hashes = tlog::stored_hashes_for_record_hash(n, *leaf, &r)?;
        let first = tlog::stored_hash_index(0, n);
        for (i, h) in (first..).zip(hashes) {
            batch.insert(i, h);
            added.push((i, h));
        }
    }
    Ok(added)
}

/// The stored hashes the root of a tree of `size` leaves reads.
pub fn needed_for_root(size: u64) -> Vec<u64> {
    recorded(|r| tlog::tree_hash(size, r).map(|_| ()))
}

/// The root hash of the tree of `size` leaves.
pub fn root(size: u64, known: &Known) -> Result<Hash, TreeError> {
    Ok(tlog::tree_hash(size, &reader(known))?)
}

/// The stored hashes the inclusion proof of leaf `n` in a tree of `size` reads.
pub fn needed_for_inclusion(size: u64, n: u64) -> Vec<u64> {
    recorded(|r| tlog::prove_record(size, n, r).map(|_| ()))
}

/// The inclusion proof of leaf `n` in the tree of `size` leaves.
pub fn inclusion(size: u64, n: u64, known: &Known) -> Result<Vec<Hash>, TreeError> {
    Ok(tlog::prove_record(size, n, &reader(known))?)
}

/// The stored hashes the consistency proof from `old` to `new` leaves reads.
pub fn needed_for_consistency(new: u64, old: u64) -> Vec<u64> {
    recorded(|r| tlog::prove_tree(new, old, r).map(|_| ()))
}

/// The proof that the tree of `new` leaves extends the tree of `old` leaves.
pub fn consistency(new: u64, old: u64, known: &Known) -> Result<Vec<Hash>, TreeError> {
    Ok(tlog::prove_tree(new, old, &reader(known))?)
}

/// The heights of the perfect subtrees a tree of `size` leaves is made of, largest first:
/// one per set bit of `size`.
fn subtree_heights(size: u64) -> Vec<u32> {
    (0..u64::BITS)
        .rev()
        .filter(|h| size >> h & 1 == 1)
        .collect()
}

/// The stored hashes that are the roots of the perfect subtrees of a tree of `size` leaves,
/// largest first: what [`Frontier::resume`] takes.
pub fn frontier_indexes(size: u64) -> Vec<u64> {
    let mut start = 0u64;
    subtree_heights(size)
        .into_iter()
        .map(|h| {
            let index = tlog::stored_hash_index(h as u8, start >> h);
            start += 1 << h;
            index
        })
        .collect()
}

/// The right edge of a tree being built leaf by leaf with nothing stored: the roots of its
/// perfect subtrees, largest first (O(log n) memory), enough for the root at every size.
/// What an offline verifier uses to recompute checkpoints from exported records.
#[derive(Debug, Clone, Default)]
pub struct Frontier {
    /// `(height, hash)` of each perfect subtree, heights strictly decreasing.
    subtrees: Vec<(u32, Hash)>,
    size: u64,
}

impl Frontier {
    /// Adds the next leaf.
    pub fn push(&mut self, leaf: Hash) {
        let mut node = (0, leaf);
        while let Some(&(height, left)) = self.subtrees.last() {
            if height != node.0 {
                break;
            }
            self.subtrees.pop();
            node = (height + 1, tlog::node_hash(left, node.1));
        }
        self.subtrees.push(node);
        self.size += 1;
    }

    /// The frontier of a tree of `size` leaves from the roots of its perfect subtrees,
    /// largest first (what [`frontier_indexes`] names), to go on adding leaves after an
    /// archived prefix. `None` when the count does not match `size`.
    pub fn resume(size: u64, roots: &[Hash]) -> Option<Self> {
        let heights = subtree_heights(size);
        if heights.len() != roots.len() {
            return None;
        }
        Some(Frontier {
            subtrees: heights.into_iter().zip(roots.iter().copied()).collect(),
            size,
        })
    }

    /// The roots of the perfect subtrees, largest first (see [`Frontier::resume`]).
    pub fn roots(&self) -> Vec<Hash> {
        self.subtrees.iter().map(|(_, h)| *h).collect()
    }

    /// How many leaves were added.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// RFC 6962's root of the leaves added so far (`None` for an empty tree): the perfect
    /// subtrees folded from the right.
    pub fn root(&self) -> Option<Hash> {
        let mut it = self.subtrees.iter().rev();
        let mut hash = it.next()?.1;
        for (_, left) in it {
            hash = tlog::node_hash(*left, hash);
        }
        Some(hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frontier_gives_the_stored_trees_root_at_every_size() {
        let (stored, leaves) = build(&[300]);
        let mut frontier = Frontier::default();
        assert_eq!(frontier.root(), None);
        for (n, leaf) in leaves.iter().enumerate() {
            frontier.push(*leaf);
            let size = n as u64 + 1;
            let want = root(size, &fetch(&stored, needed_for_root(size))).unwrap();
            assert_eq!(frontier.root(), Some(want), "size {size}");
        }
    }

    #[test]
    fn a_frontier_resumed_from_stored_hashes_goes_on_as_if_built_from_the_start() {
        let (stored, leaves) = build(&[200]);
        for start in [0u64, 1, 2, 3, 7, 8, 64, 99, 128, 199] {
            let roots: Vec<Hash> = frontier_indexes(start)
                .into_iter()
                .map(|i| stored[&i])
                .collect();
            let mut resumed = Frontier::resume(start, &roots).unwrap();
            let mut built = Frontier::default();
            for leaf in &leaves[..start as usize] {
                built.push(*leaf);
            }
            assert_eq!(built.roots(), roots, "start {start}");
            for leaf in &leaves[start as usize..] {
                resumed.push(*leaf);
                built.push(*leaf);
                assert_eq!(resumed.root(), built.root(), "start {start}");
            }
            // A size with another perfect subtree needs another root.
            assert!(Frontier::resume(start | 1 << 20, &roots).is_none());
        }
    }

    /// A whole tree built the way the control database builds it: in batches, fetching
    /// only what `needed_for_append` names.
    fn build(sizes: &[u64]) -> (Known, Vec<Hash>) {
        let mut stored = Known::new();
        let mut leaves = Vec::new();
        let mut size = 0;
        for &grow in sizes {
            let new: Vec<Hash> = (size..size + grow)
                .map(|n| leaf(&n.to_be_bytes()))
                .collect();
            let fetched: Known = needed_for_append(size, grow)
                .into_iter()
                .map(|i| (i, stored[&i]))
                .collect();
            for (i, h) in append(size, &new, &fetched).unwrap() {
                assert!(stored.insert(i, h).is_none(), "index {i} stored twice");
            }
            leaves.extend(new);
            size += grow;
        }
        (stored, leaves)
    }

    fn fetch(stored: &Known, indexes: Vec<u64>) -> Known {
        indexes.into_iter().map(|i| (i, stored[&i])).collect()
    }

    #[test]
    fn every_leaf_is_proven_in_every_tree_and_every_tree_extends_the_last() {
        let (stored, leaves) = build(&[1, 1, 2, 3, 5, 8, 13, 1, 30]);
        let total = leaves.len() as u64;
        let mut previous: Option<(u64, Hash)> = None;
        for size in 1..=total {
            let root = root(size, &fetch(&stored, needed_for_root(size))).unwrap();
            for n in 0..size {
                let proof =
                    inclusion(size, n, &fetch(&stored, needed_for_inclusion(size, n))).unwrap();
                tlog::check_record(&proof, size, root, n, leaves[n as usize]).unwrap();
                // Another leaf's hash or another index does not verify.
                let other = leaves[((n + 1) % size) as usize];
                if size > 1 {
                    assert!(tlog::check_record(&proof, size, root, n, other).is_err());
                }
            }
            if let Some((old, old_root)) = previous {
                let proof = consistency(
                    size,
                    old,
                    &fetch(&stored, needed_for_consistency(size, old)),
                )
                .unwrap();
                tlog::check_tree(&proof, size, root, old, old_root).unwrap();
                let mut bad = proof.clone();
                if let Some(first) = bad.first_mut() {
                    first.0[0] ^= 1;
                    assert!(tlog::check_tree(&bad, size, root, old, old_root).is_err());
                }
            }
            previous = Some((size, root));
        }
    }

    #[test]
    fn batches_of_any_shape_store_the_same_hashes() {
        let (one_by_one, _) = build(&[1; 40]);
        let (at_once, _) = build(&[40]);
        let (uneven, _) = build(&[7, 1, 16, 16]);
        assert_eq!(one_by_one, at_once);
        assert_eq!(one_by_one, uneven);
    }
}
