//! A distributed key-value store: a hash table spread over the PEs, which every PE
//! updates at once. A key lives on the PE its hash names, in the first free slot from
//! the one its hash names (linear probing). A PE claims a slot for a key with one
//! `atomic_compare_swap` (empty → key), so inserting takes no lock; a slot's value (a
//! count and a sum, two words that must change together) is updated under one lock of a
//! `[Lock; N]` array, striped over the slots.
//!
//! Each PE adds `UPDATES` (key, value) pairs drawn from a small key space, so the PEs
//! collide on keys all the time. Then every PE looks up every key and checks its count
//! and sum against a sequential map of every PE's updates.
//!
//! Run: `cargo run --release --example kvstore [-- UPDATES]` (4 PEs unless `SHMEM_NPES`
//! says otherwise; 2,000 updates per PE by default).

use std::collections::BTreeMap;
use std::error::Error;

use shmem_typed::prelude::*;

/// Slots of the table on each PE.
const SLOTS: usize = 1024;
/// Locks striped over all slots of all PEs.
const LOCKS_N: usize = 64;
/// Keys are drawn from `1..=KEYS` (0 marks an empty slot).
const KEYS: u64 = 500;

/// A slot's key, 0 while empty.
#[symmetric]
static SLOT_KEYS: [u64; SLOTS] = [0; SLOTS];

/// A slot's value: how many updates its key had, and the sum of their values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[repr(C)]
struct Stats {
    count: u64,
    sum: u64,
}

#[symmetric]
static SLOT_VALUES: [Stats; SLOTS] = [Stats { count: 0, sum: 0 }; SLOTS];

#[symmetric]
static LOCKS: [Lock; LOCKS_N] = [const { Lock::new() }; LOCKS_N];

/// splitmix64: a well-mixed 64-bit value for every input.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Update `i` of PE `me`: a key and a value.
fn update(me: usize, i: u64) -> (u64, u64) {
    let r = mix(((me as u64) << 32) | i);
    (1 + r % KEYS, r >> 48)
}

/// The PE that holds `key`, and the slots to probe there, in order.
fn home(key: u64, n: usize) -> (usize, impl Iterator<Item = usize>) {
    let h = mix(key);
    let first = (h / n as u64) as usize % SLOTS;
    (
        (h % n as u64) as usize,
        (0..SLOTS).map(move |k| (first + k) % SLOTS),
    )
}

/// Adds `value` to `key`'s entry, inserting the key if it is new.
fn add(pe: &mut Pe, key: u64, value: u64) -> Result<(), Box<dyn Error>> {
    let (owner, probe) = home(key, pe.n_pes());
    for slot in probe {
        let found = SLOT_KEYS.at(slot)?.atomic_compare_swap(pe, owner, 0, key)?;
        if found == 0 || found == key {
            let lock = LOCKS.at((owner * SLOTS + slot) % LOCKS_N)?;
            lock.with_lock(pe, |pe| {
                let old = SLOT_VALUES.g(pe, owner, slot)?;
                let new = Stats {
                    count: old.count + 1,
                    sum: old.sum + value,
                };
                SLOT_VALUES.p(pe, owner, slot, new)
            })?;
            return Ok(());
        }
    }
    Err(format!("the table of PE {owner} is full").into())
}

/// `key`'s entry, or `None` if it was never added.
fn lookup(pe: &Pe, key: u64) -> Result<Option<Stats>, ShmemError> {
    let (owner, probe) = home(key, pe.n_pes());
    for slot in probe {
        match SLOT_KEYS.at(slot)?.atomic_fetch(pe, owner)? {
            0 => return Ok(None),
            k if k == key => return Ok(Some(SLOT_VALUES.g(pe, owner, slot)?)),
            _ => {}
        }
    }
    Ok(None)
}

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let updates: u64 = match std::env::args().nth(1) {
        None => 2000,
        Some(text) => text
            .parse()
            .map_err(|_| format!("UPDATES is a number, not {text:?}"))?,
    };
    let (me, n) = (pe.my_pe(), pe.n_pes());
    for i in 0..updates {
        let (key, value) = update(me, i);
        add(pe, key, value)?;
    }
    pe.barrier_all()?;

    let mut expected: BTreeMap<u64, Stats> = BTreeMap::new();
    for (key, value) in (0..n).flat_map(|p| (0..updates).map(move |i| update(p, i))) {
        let entry = expected.entry(key).or_default();
        entry.count += 1;
        entry.sum += value;
    }
    for key in 1..=KEYS {
        let got = lookup(pe, key)?;
        if got != expected.get(&key).copied() {
            return Err(format!("key {key}: {got:?}, expected {:?}", expected.get(&key)).into());
        }
    }
    let held = SLOT_KEYS.read(pe).iter().filter(|&&k| k != 0).count();
    let keys = pe.team_world().reduce_local::<Sum, usize>(pe, &[held])?[0];
    if keys != expected.len() {
        return Err(format!("{keys} keys stored, expected {}", expected.len()).into());
    }
    pe.barrier_all()?;
    if me == 0 {
        println!(
            "kvstore: {} updates of {keys} keys on {n} PEs; every key's count and sum equal to the sequential map",
            updates * n as u64
        );
    }
    Ok(())
}
