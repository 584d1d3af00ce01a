//! Runs of broadcasts on a gathered set: after a broadcast every member agreed to (its
//! root, count and element type), whose data fits one message ([`carries`]) and where
//! no member is in checked mode (each element's [`RUN_WORD`] says so: checked mode is
//! each PE's own), the set's next broadcast with the same check words goes point to
//! point: the root sends each reader its head marked [`MESSAGE`] with the call's number
//! and the data, and returns; each reader receives that one message, and sends nothing.
//! Every [`DEPTH`]th broadcast of a run goes through the agreement again (the root then
//! waits for it at its next such broadcast), which bounds how far a root runs ahead.
//!
//! Every member decides alike from calls all agreed to, so members in step take the same
//! path. While a run may go on, every reader begins its next call on the set, whatever
//! it is, by receiving the root's message alone: a run's message for this very call is
//! the call; an agreement message (the root made another call) makes the reader send
//! its own message to every other member and receive the others', completing the
//! agreement every member makes, so a difference is an error on every member; a run's
//! message for another call than this PE's (this PE left the run where the root went
//! on), or the root's close, ends the job naming the cause ([`Call::run_broken`]): the
//! root has returned, and the readers that went on with it too, so no error value on
//! every member can report it. At finalize the root of a run that may go on sends each
//! reader a close and each reader receives it ([`SetComms::close_runs`]): a reader that
//! made fewer calls finds the root's next broadcast there instead, a root that made
//! fewer is found by the readers' waits (its close). Every wait is the agreement's
//! ([`Call::wait_agreement`]), whose deadlock watch and look at members that left run
//! as for any other call; nothing here reads another PE's memory.

use super::{
    carry_max, head_of, Call, Carry, Elements, SetComms, AGREE_INLINE, CALL_WORD, CHECK_WORDS,
    HEAD_BYTES, HEAD_WORDS, RUN_WORD,
};
use crate::coll::ctx::CallEnv;
use crate::coll::sets::SetSpec;
use crate::transport::groups::{Comm, GroupCollectives, Peers};
use crate::transport::Transport;
use crate::wire::descriptor::Descriptor;

/// [`RUN_WORD`] of a member that may not take part in runs (checked mode).
pub(super) const MAY_NOT: u64 = 0;
/// [`RUN_WORD`] of a member that may.
pub(super) const MAY: u64 = 1;
/// [`RUN_WORD`] of a run's broadcast, sent by its root alone.
pub(super) const MESSAGE: u64 = 2;
/// [`RUN_WORD`] of a run's close at the root's finalize.
const CLOSE: u64 = 3;

/// Broadcasts of a run sent point to point before one goes through the agreement again.
const DEPTH: u32 = 64;

/// A set's run of broadcasts: the agreed call it repeats and the latest call of it.
#[derive(Clone, Copy)]
pub(super) struct Run {
    check: [u64; CHECK_WORDS],
    /// The root's index in the set.
    root: usize,
    /// The communicator its calls were made on.
    comm: Comm,
    /// The set's latest call, which was the run's.
    call: u64,
    /// Broadcasts the run may still send point to point before the next agreement.
    left: u32,
    /// The set, and this PE's index in it.
    set: SetSpec,
    index: usize,
    /// The communicator was released (see `SetComms::release`) and is kept by the run
    /// alone, for its close.
    kept: bool,
}

/// What a broadcast root's deferred exchange was.
pub(super) enum Sent {
    /// A run's broadcast: messages sent, none received, nothing to judge.
    Message,
    /// An agreement, on `comm`; `candidate`: every member that agrees to it starts a run.
    Agreement { comm: Comm, candidate: bool },
}

/// What a run's reader found in its root's message (see [`Call::run_root_first`]).
pub(super) enum First {
    /// The call's data: the call is complete.
    Delivered,
    /// The agreement goes on with the members `Peers` selects.
    Rest(Peers),
}

/// Whether a broadcast of `bytes` on a set of `n` members may make a run: its data fits
/// one message.
pub(super) fn carries(bytes: usize, n: usize) -> bool {
    bytes <= AGREE_INLINE && bytes <= carry_max(n)
}

impl Elements {
    /// Whether every member's message says it may take part in runs, in call `call`.
    pub(super) fn all_may_run(&self, call: u64) -> bool {
        (0..self.lens.len()).all(|m| {
            let head = self.head(m);
            head[RUN_WORD] == MAY && head[CALL_WORD] == call
        })
    }
}

impl SetComms {
    /// Keeps `comm`, the released communicator of the set with key `key`, if the set's
    /// run was made on it (for the run's close at finalize); whether it did.
    pub(super) fn keep_for_run(&mut self, key: u64, comm: Comm) -> bool {
        match self.runs.get_mut(&key) {
            Some(run) if run.comm == comm => {
                run.kept = true;
                true
            }
            _ => false,
        }
    }

    /// The run `old` is over: a communicator it kept is freed once no deferred exchange
    /// of the set needs it.
    fn drop_run<G: GroupCollectives>(&mut self, groups: &G, key: u64, old: Run) {
        if !old.kept {
            return;
        }
        if self.deferred.get(&key).is_some_and(|q| !q.is_empty()) {
            self.retired.entry(key).or_default().push(old.comm);
        } else {
            groups.free_comm(old.comm);
        }
    }

    /// At finalize, after every deferred agreement is settled: the close of every run
    /// that may go on (see the module).
    pub(super) fn close_runs<T: Transport>(&mut self, t: &T, groups: &T::Groups, env: &CallEnv) {
        let mut open: Vec<(u64, Run)> = (self.runs.iter())
            .filter(|(_, run)| run.left > 0)
            .map(|(&key, &run)| (key, run))
            .collect();
        open.sort_by_key(|&(key, _)| key);
        for (_, run) in open {
            let mut call = Call {
                t,
                groups,
                comms: self,
                env,
                set: run.set,
                index: run.index,
                during: "finalize",
            };
            call.close_run(run);
        }
        self.runs.clear();
    }
}

impl<T: Transport> Call<'_, T> {
    /// This member's message head from its descriptor `mine` for its call number `call`
    /// on the set: [`head_of`], whether it may take part in runs, the call number.
    pub(super) fn head(&self, mine: &Descriptor, call: u64) -> [u64; HEAD_WORDS] {
        let mut head = head_of(mine);
        head[RUN_WORD] = if self.env.checked { MAY_NOT } else { MAY };
        head[CALL_WORD] = call;
        head
    }

    /// The set's run, if call `call` on `comm` may go on with it.
    fn run_at(&self, comm: Comm, call: u64) -> Option<Run> {
        let run = *self.comms.runs.get(&self.set.key())?;
        (run.comm == comm && run.call + 1 == call && run.left > 0).then_some(run)
    }

    /// The root of the set's run if call `call` on `comm` may go on with it and this
    /// PE is one of its readers.
    pub(super) fn run_reader(&self, comm: Comm, call: u64) -> Option<usize> {
        let run = self.run_at(comm, call)?;
        (run.root != self.index).then_some(run.root)
    }

    /// Whether this PE, making call `call` on `comm` with check words `check`, goes on
    /// with the set's run as its root.
    pub(super) fn run_continues(&self, comm: Comm, call: u64, check: &[u64; CHECK_WORDS]) -> bool {
        self.run_at(comm, call)
            .is_some_and(|run| run.root == self.index && run.check == *check)
    }

    /// A root about to broadcast with check words `check`: if its previous call on the
    /// set was a broadcast with the same words whose agreement it deferred, it waits for
    /// that agreement, whose verdict decides (alike on every member) whether a run
    /// starts or goes on.
    pub(super) fn settle_run_start(
        &mut self,
        check: &[u64; CHECK_WORDS],
    ) -> crate::error::RtResult<()> {
        let key = self.set.key();
        let Some(&(_, calls)) = self.comms.comms.get(&key) else {
            return Ok(());
        };
        let starts = (self.comms.deferred.get(&key))
            .and_then(|queue| queue.back())
            .is_some_and(|d| {
                d.call == calls && d.check == *check && matches!(d.run, Sent::Agreement { .. })
            });
        if starts {
            self.settle(true)?;
        }
        Ok(())
    }

    /// The set's run after its call `call` on `comm`, made through the agreement: the
    /// run of `run` (check words, root) when every member agreed to a broadcast that may
    /// make one, else none. A later call's state is kept.
    pub(super) fn run_agreed(
        &mut self,
        comm: Comm,
        call: u64,
        run: Option<([u64; CHECK_WORDS], usize)>,
    ) {
        let key = self.set.key();
        if self.comms.runs.get(&key).is_some_and(|now| now.call > call) {
            return;
        }
        let old = match run {
            Some((check, root)) => self.comms.runs.insert(
                key,
                Run {
                    check,
                    root,
                    comm,
                    call,
                    left: DEPTH,
                    set: self.set,
                    index: self.index,
                    kept: false,
                },
            ),
            None => self.comms.runs.remove(&key),
        };
        if let Some(old) = old.filter(|old| old.comm != comm || run.is_none()) {
            self.comms.drop_run(self.groups, key, old);
        }
    }

    /// The set's run went on with call `call` (sent or received point to point).
    pub(super) fn run_advanced(&mut self, call: u64) {
        if let Some(run) = self.comms.runs.get_mut(&self.set.key()) {
            run.call = call;
            run.left -= 1;
        }
    }

    /// The first step of call `call` on `comm` of a reader of a run that may go on: the
    /// root's message alone, into `elems` (prepared with this PE's `head`), waited for.
    /// Its data if it is this call's run message; the rest of the agreement (every other
    /// member) if it is an agreement message; else the job ends naming the cause. Every
    /// agreement of the set this PE deferred must be settled. Not a reader: the whole
    /// agreement.
    pub(super) fn run_root_first(
        &mut self,
        comm: Comm,
        call: u64,
        elems: &mut Elements,
        head: &[u64; HEAD_WORDS],
    ) -> crate::error::RtResult<First> {
        let Some(root) = self.run_reader(comm, call) else {
            return Ok(First::Rest(Peers::All));
        };
        self.receive_root(comm, call, root, elems, head);
        let theirs = elems.head(root);
        let whole = elems.lens[root] as usize >= HEAD_BYTES;
        match theirs[RUN_WORD] {
            MAY | MAY_NOT if whole && theirs[CALL_WORD] == call => {
                Ok(First::Rest(Peers::AllBut(root)))
            }
            MESSAGE
                if whole
                    && theirs[CALL_WORD] == call
                    && theirs[..CHECK_WORDS] == head[..CHECK_WORDS] =>
            {
                Ok(First::Delivered)
            }
            _ => self.run_left(call, root, &theirs, "made call"),
        }
    }

    /// [`Call::run_root_first`] for a PE about to defer an agreement of its own (it is
    /// the root of a broadcast): the root's message can only be an agreement's.
    pub(super) fn run_root_first_settled(
        &mut self,
        comm: Comm,
        call: u64,
        elems: &mut Elements,
        head: &[u64; HEAD_WORDS],
    ) -> crate::error::RtResult<Peers> {
        if self.run_reader(comm, call).is_none() {
            return Ok(Peers::All);
        }
        self.settle(true)?;
        match self.run_root_first(comm, call, elems, head)? {
            First::Rest(from) => Ok(from),
            First::Delivered => unreachable!("a run's message for a call of another root"),
        }
    }

    /// Receives member `root`'s message of call `call` on `comm` alone into `elems`
    /// (prepared with this PE's `head`), as the agreement is waited for.
    fn receive_root(
        &self,
        comm: Comm,
        call: u64,
        root: usize,
        elems: &mut Elements,
        head: &[u64; HEAD_WORDS],
    ) {
        // SAFETY: the slots hold `slot_bytes(n)` per member, and no member sends more;
        // they stay valid until the wait below finds the receive complete (an error there
        // ends the job, never a return with it in flight — see `wait_agreement`).
        let started = unsafe {
            self.groups.start_exchange_among(
                comm,
                elems.exchange(self.index, head, Carry::NONE),
                Peers::None,
                Peers::Only(root),
            )
        };
        let mut request = match started {
            Ok(request) => request,
            Err(err) => self.run_broken(call, &err.to_string()),
        };
        self.started(call);
        // A root that runs ahead sent the message already: no wait to watch.
        if matches!(self.groups.test(&mut request), Ok(true)) {
            return;
        }
        // An error there ends the job.
        let _ = self.wait_agreement(call, &mut request);
    }

    /// Ends the job: this PE, making call `call` (`what`: "made call", or the close at
    /// finalize), received `theirs` from `root`, the root of the set's run, which is not
    /// what that call pairs with.
    fn run_left(&self, call: u64, root: usize, theirs: &[u64; HEAD_WORDS], what: &str) -> ! {
        let root_pe = self.set.member(root);
        let made = match theirs[RUN_WORD] {
            MESSAGE => format!(
                "sent its call {} point to point, as a broadcast of the set's run ({})",
                theirs[CALL_WORD],
                describe(theirs)
            ),
            CLOSE => format!("finalized after {} calls on the set", theirs[CALL_WORD] - 1),
            _ => format!(
                "made its call {} through the agreement ({})",
                theirs[CALL_WORD],
                describe(theirs)
            ),
        };
        self.run_broken(
            call,
            &format!(
                "PE {root_pe}, the root of the set's run of broadcasts, {made} where this PE {what} {call}"
            ),
        )
    }

    /// Ends the job for a mismatch found in or around a run of broadcasts (call `call`,
    /// `what`), naming it: the run's root returned without waiting for its readers, so
    /// the members cannot all report it as an error of the same call.
    fn run_broken(&self, call: u64, what: &str) -> ! {
        crate::error::print_line(&format!(
            "PE {}: {}: call {call} on {}: {what}; the job ends (a run's root does not wait \
             for its readers, so a mismatch there is not an error every member can return)",
            self.t.me(),
            self.during,
            crate::error::describe_set_key(self.set.key()),
        ));
        self.groups.abandon(1)
    }

    /// Ends the job if a member's message of the agreement of call `call` just received
    /// is a run's (a member took this call as a run's broadcast where this PE made it
    /// through the agreement).
    pub(super) fn run_messages_refused(&self, call: u64) {
        let elems = &self.comms.elems;
        let odd = (0..elems.lens.len()).find(|&m| {
            let theirs = elems.head(m);
            elems.lens[m] as usize >= HEAD_BYTES && matches!(theirs[RUN_WORD], MESSAGE | CLOSE)
        });
        if let Some(m) = odd {
            self.run_left(call, m, &elems.head(m), "made, through the agreement, call");
        }
    }

    /// The close of `run` at finalize (see the module): the root sends it, a reader
    /// receives the root's next message and ends the job unless it is the close.
    fn close_run(&mut self, run: Run) {
        let call = run.call + 1;
        let mut head = [0u64; HEAD_WORDS];
        head[RUN_WORD] = CLOSE;
        head[CALL_WORD] = call;
        let mut elems = std::mem::take(&mut self.comms.elems);
        elems.prepare(self.set.size(), self.index, &head);
        if run.root == self.index {
            // SAFETY: the head alone (copied), no receive.
            let started = unsafe {
                self.groups.start_exchange_among(
                    run.comm,
                    elems.exchange(self.index, &head, Carry::NONE),
                    Peers::All,
                    Peers::None,
                )
            };
            let mut request = match started {
                Ok(request) => request,
                Err(err) => self.run_broken(call, &err.to_string()),
            };
            self.started(call);
            // An error there ends the job.
            let _ = self.wait_agreement(call, &mut request);
        } else {
            self.receive_root(run.comm, call, run.root, &mut elems, &head);
            let theirs = elems.head(run.root);
            if theirs[RUN_WORD] != CLOSE || theirs[CALL_WORD] != call {
                self.run_left(call, run.root, &theirs, "finalized before call");
            }
        }
        self.comms.elems = elems;
    }
}

/// The call a message head describes, for an error.
fn describe(head: &[u64; HEAD_WORDS]) -> String {
    match super::descriptor_of(head).op() {
        Ok(op) => op.to_string(),
        Err(_) => "a call this PE cannot decode".to_owned(),
    }
}
