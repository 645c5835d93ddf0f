//! Active and inactive LRU lists of pages, as Linux keeps them per memory node
//! (mm/swap.c `folio_mark_accessed`, mm/vmscan.c `shrink_active_list`): a page enters
//! the inactive list; a reference marks it referenced, a second one (while it is
//! still referenced) moves it to the active list; aging moves pages from the active
//! list's tail to the inactive list's head, clearing their referenced mark; reclaim
//! and demotion take pages from the inactive list's tail.
//!
//! Pages are page numbers; the links are arrays indexed by them (no allocation per
//! operation once a page number has been seen), so every operation is O(1).

const NONE: u32 = u32::MAX;

/// Which list a page is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Inactive = 0,
    Active = 1,
}

/// What reclaim does with a page from the inactive list's tail, from its references
/// (mm/vmscan.c `folio_check_references`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Referenced again while marked: to the active list's head.
    Activate,
    /// Referenced once: marked, and rotated to the inactive list's head for another
    /// trip.
    Keep,
    /// Not referenced: reclaim it (with memory tiering, demote it).
    Reclaim,
}

/// Where a page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Off,
    On(Which),
}

#[derive(Clone, Copy, Debug)]
struct Node {
    prev: u32,
    next: u32,
    /// 0 off-list, 1 inactive, 2 active.
    list: u8,
    referenced: bool,
}

const OFF: Node = Node { prev: NONE, next: NONE, list: 0, referenced: false };

/// Two doubly linked lists over page numbers; see the module documentation.
#[derive(Clone, Debug, Default)]
pub struct LruLists {
    nodes: Vec<Node>,
    /// Head (most recent) and tail (least recent) of each list.
    head: [u32; 2],
    tail: [u32; 2],
    len: [u64; 2],
}

impl LruLists {
    pub fn new() -> LruLists {
        LruLists { nodes: Vec::new(), head: [NONE; 2], tail: [NONE; 2], len: [0; 2] }
    }

    fn node(&mut self, page: u64) -> &mut Node {
        assert!(page < NONE as u64, "page number {page} beyond the lists' range");
        if page as usize >= self.nodes.len() {
            self.nodes.resize(page as usize + 1, OFF);
        }
        &mut self.nodes[page as usize]
    }

    /// The list `page` is on.
    pub fn place(&self, page: u64) -> Place {
        match self.nodes.get(page as usize).map_or(0, |n| n.list) {
            0 => Place::Off,
            1 => Place::On(Which::Inactive),
            _ => Place::On(Which::Active),
        }
    }

    pub fn len(&self, which: Which) -> u64 {
        self.len[which as usize]
    }

    pub fn is_referenced(&self, page: u64) -> bool {
        self.nodes.get(page as usize).is_some_and(|n| n.referenced)
    }

    /// Takes `page` off its list (if on one).
    pub fn remove(&mut self, page: u64) {
        let n = *self.node(page);
        if n.list == 0 {
            return;
        }
        let w = n.list as usize - 1;
        match n.prev {
            NONE => self.head[w] = n.next,
            p => self.nodes[p as usize].next = n.next,
        }
        match n.next {
            NONE => self.tail[w] = n.prev,
            x => self.nodes[x as usize].prev = n.prev,
        }
        self.len[w] -= 1;
        *self.node(page) = Node { referenced: n.referenced, ..OFF };
    }

    /// Puts `page` at the head of list `which` (taking it off any list first).
    pub fn push_head(&mut self, page: u64, which: Which) {
        self.remove(page);
        let w = which as usize;
        let old = self.head[w];
        let referenced = self.node(page).referenced;
        *self.node(page) = Node { prev: NONE, next: old, list: w as u8 + 1, referenced };
        match old {
            NONE => self.tail[w] = page as u32,
            h => self.nodes[h as usize].prev = page as u32,
        }
        self.head[w] = page as u32;
        self.len[w] += 1;
    }

    /// A new page: the head of the inactive list, not referenced.
    pub fn add(&mut self, page: u64) {
        self.node(page).referenced = false;
        self.push_head(page, Which::Inactive);
    }

    /// A reference to `page` (Linux's `folio_mark_accessed`): an unreferenced page
    /// becomes referenced; a referenced inactive page moves to the head of the active
    /// list, unreferenced. Returns whether it was activated. A page on no list is
    /// added first.
    pub fn referenced(&mut self, page: u64) -> bool {
        if self.place(page) == Place::Off {
            self.add(page);
        }
        let n = self.node(page);
        if !n.referenced {
            n.referenced = true;
            return false;
        }
        if n.list == Which::Inactive as u8 + 1 {
            n.referenced = false;
            self.push_head(page, Which::Active);
            return true;
        }
        false
    }

    /// Reclaim's decision on an inactive page whose Accessed bit was `young` when
    /// tested (Linux's `folio_check_references` for a page with one mapping): the
    /// referenced mark is tested and cleared; a young page is marked again and
    /// activated if it was marked already, else kept on the inactive list (rotated to
    /// its head); a page that is not young is to be reclaimed. The lists are updated
    /// for the first two; a page to reclaim stays where it is until it has moved.
    pub fn check_references(&mut self, page: u64, young: bool) -> Verdict {
        let n = self.node(page);
        let was = std::mem::replace(&mut n.referenced, young);
        if !young {
            return Verdict::Reclaim;
        }
        if was {
            self.push_head(page, Which::Active);
            Verdict::Activate
        } else {
            self.push_head(page, Which::Inactive);
            Verdict::Keep
        }
    }

    /// The least recent page of `which`, if any.
    pub fn tail(&self, which: Which) -> Option<u64> {
        match self.tail[which as usize] {
            NONE => None,
            t => Some(t as u64),
        }
    }

    /// Ages up to `n` pages: each from the active list's tail to the inactive list's
    /// head, unreferenced (Linux's `shrink_active_list`, without its second chance for
    /// executable pages). Returns the pages moved.
    pub fn age(&mut self, n: u64) -> u64 {
        let mut moved = 0;
        while moved < n {
            let Some(p) = self.tail(Which::Active) else { break };
            self.node(p).referenced = false;
            self.push_head(p, Which::Inactive);
            moved += 1;
        }
        moved
    }

    /// Pages of `which` from tail (least recent) to head.
    pub fn iter_from_tail(&self, which: Which) -> impl Iterator<Item = u64> + '_ {
        let mut at = self.tail[which as usize];
        std::iter::from_fn(move || {
            if at == NONE {
                return None;
            }
            let p = at;
            at = self.nodes[p as usize].prev;
            Some(p as u64)
        })
    }

    /// Pages of `which` from head (most recent) to tail.
    pub fn iter(&self, which: Which) -> impl Iterator<Item = u64> + '_ {
        let mut at = self.head[which as usize];
        std::iter::from_fn(move || {
            if at == NONE {
                return None;
            }
            let p = at;
            at = self.nodes[p as usize].next;
            Some(p as u64)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reclaim_gives_a_young_page_a_second_trip_and_activates_it_on_the_next() {
        let mut l = LruLists::new();
        for p in [1, 2, 3] {
            l.add(p);
        }
        // Inactive, head to tail: 3 2 1. Page 1 young and unmarked: marked, rotated.
        assert_eq!(l.check_references(1, true), Verdict::Keep);
        assert_eq!(l.iter(Which::Inactive).collect::<Vec<_>>(), vec![1, 3, 2]);
        assert!(l.is_referenced(1));
        // Young again on its next trip: active, still marked (folio_set_referenced).
        assert_eq!(l.check_references(1, true), Verdict::Activate);
        assert_eq!(l.place(1), Place::On(Which::Active));
        assert!(l.is_referenced(1));
        // Not young: reclaim, the mark cleared, the page left in place.
        assert_eq!(l.check_references(2, false), Verdict::Reclaim);
        assert_eq!(l.tail(Which::Inactive), Some(2));
        // A marked page that is not young loses its mark and is reclaimed.
        l.referenced(3);
        assert_eq!(l.check_references(3, false), Verdict::Reclaim);
        assert!(!l.is_referenced(3));
    }

    #[test]
    fn two_references_activate_aging_deactivates() {
        let mut l = LruLists::new();
        for p in [1, 2, 3] {
            l.add(p);
        }
        assert_eq!(l.iter(Which::Inactive).collect::<Vec<_>>(), vec![3, 2, 1]);
        // First reference marks, second activates.
        assert!(!l.referenced(1));
        assert!(l.is_referenced(1));
        assert!(l.referenced(1));
        assert_eq!(l.place(1), Place::On(Which::Active));
        assert!(!l.is_referenced(1), "activated pages start unreferenced");
        assert_eq!((l.len(Which::Inactive), l.len(Which::Active)), (2, 1));
        assert_eq!(l.tail(Which::Inactive), Some(2));
        // A referenced active page stays where it is.
        l.referenced(1);
        assert!(!l.referenced(1));
        // Aging moves the active tail to the inactive head, unreferenced.
        l.referenced(3);
        l.referenced(3);
        assert_eq!(l.iter(Which::Active).collect::<Vec<_>>(), vec![3, 1]);
        assert_eq!(l.age(1), 1);
        assert_eq!(l.iter(Which::Inactive).collect::<Vec<_>>(), vec![1, 2]);
        assert!(!l.is_referenced(1));
        assert_eq!(l.age(5), 1, "only one page left to age");
        l.remove(2);
        l.remove(2);
        assert_eq!(l.iter(Which::Inactive).collect::<Vec<_>>(), vec![3, 1]);
        assert_eq!(l.iter_from_tail(Which::Inactive).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!((l.len(Which::Inactive), l.len(Which::Active)), (2, 0));
        assert_eq!(l.place(2), Place::Off);
        // A page never added is added by its first reference.
        assert!(!l.referenced(40));
        assert_eq!(l.place(40), Place::On(Which::Inactive));
    }
}
