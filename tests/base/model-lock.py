"""model-lock.py - an exhaustive model of how the library's internal lock
(lib/base/lock.h, lock.c) sleeps and wakes, under sequential consistency
(every atomic of that path is seq_cst).

The lock is three words: owner (0 or the holder), waiters (threads in the
sleeping loop) and seq (the futex word; odd: a wake is pending).  The
futex queue is explicit: a wait sleeps only while seq holds the value the
waiter read, and a wake takes one sleeper out (any one: each is explored).
Each configuration is a list of scripts of lock (L) and unlock (U), one
per thread, and every interleaving of their atomic steps is explored,
without spurious wake-ups (they would hide a lost one) and with them.

Checked: no end state where a thread cannot move (a lost wake-up), and
owner and waiters 0 at the end; the lock itself is a compare-and-swap,
so two owners cannot be.  Exit status 0 when every configuration passes.

--mutant=NAME takes a part of the protocol out, and the model must then
find a lost wake-up (exit status 0 when it does, 1 when it does not):
no-clear (a waiter never clears a pending wake), clear-late (it clears it
after its look at the owner, not before); --mutants lists them, and
tests/check-models.sh runs every way.  Keep the model in step with
jp__lock_slow and jp__unlock_wake (lock.c) and jp__unlock (lock.h).
"""
import sys

MUTANTS = ('no-clear', 'clear-late')
MUTANT = None
for a in sys.argv[1:]:
    if a == '--mutants':
        print(' '.join(MUTANTS))
        sys.exit(0)
    if a.startswith('--mutant=') and a.split('=', 1)[1] in MUTANTS:
        MUTANT = a.split('=', 1)[1]
    else:
        sys.exit('usage: model-lock.py [--mutants | --mutant=%s]' % '|'.join(MUTANTS))


def run(scripts, spurious):
    """None, or (what went wrong, the state)."""
    n = len(scripts)
    # Memory: (owner, waiters, seq, sleepers); a thread: (step, pc, s).
    init = ((0, 0, 0, frozenset()), tuple((0, 'start', 0) for _ in range(n)))
    seen = {init}
    stack = [init]
    while stack:
        st = stack.pop()
        (owner, w, seq, asleep), th = st
        succ = []
        for i, (si, pc, s) in enumerate(th):
            me = i + 1
            if si >= len(scripts[i]):
                continue

            def go(npc, ns=0, nowner=owner, nw=w, nseq=seq, nasleep=asleep, done=False):
                t = list(th)
                t[i] = (si + 1, 'start', 0) if done else (si, npc, ns)
                succ.append(((nowner, nw, nseq, nasleep), tuple(t)))

            if scripts[i][si] == 'L':
                if pc == 'start':       # jp__lock's CAS and the spin's
                    if owner == 0:
                        go(None, nowner=me, done=True)
                    else:
                        go('announce')
                elif pc == 'announce':
                    go('read', nw=w + 1)
                elif pc == 'read':
                    go('clear', ns=seq)
                elif pc == 'clear':     # a pending wake cleared (CAS loop)
                    if MUTANT is None and s & 1:
                        go('look', ns=seq + 1, nseq=seq + 1) if seq == s else go('clear', ns=seq)
                    else:
                        go('look', ns=s)
                elif pc == 'look':      # the CAS on the owner
                    if owner == 0:
                        go('leave', nowner=me)
                    elif MUTANT == 'clear-late' and seq & 1:
                        go('wait', ns=seq + 1, nseq=seq + 1)
                    else:
                        go('wait', ns=s)
                elif pc == 'leave':
                    go(None, nw=w - 1, done=True)
                elif pc == 'wait':      # futex_wait(&seq, s)
                    if seq == s:
                        go('asleep', ns=s, nasleep=asleep | {i})
                    else:
                        go('back')
                elif pc == 'asleep':
                    if i not in asleep:
                        go('back')      # woken
                    elif spurious:
                        go('back', nasleep=asleep - {i})
                elif pc == 'back':
                    go('announce', nw=w - 1)
            else:
                if pc == 'start':       # jp__unlock: the store, then waiters
                    assert owner == me
                    go('waiters', nowner=0)
                elif pc == 'waiters':
                    if w == 0:
                        go(None, done=True)
                    else:
                        go('pending', ns=seq)
                elif pc == 'pending':   # jp__unlock_wake's CAS loop
                    if s & 1:
                        go(None, done=True)
                    elif seq == s:
                        go('wake', nseq=s + 1)
                    else:
                        go('pending', ns=seq)
                elif pc == 'wake':      # futex_wake(&seq, 1)
                    for j in asleep:
                        go(None, nasleep=asleep - {j}, done=True)
                    if not asleep:
                        go(None, done=True)
        if not succ:
            if any(si < len(scripts[i]) for i, (si, _, _) in enumerate(th)):
                return ('a lost wake-up', st)
            if owner != 0 or w != 0:
                return ('owner or waiters left set', st)
        for x in succ:
            if x not in seen:
                seen.add(x)
                stack.append(x)
    return None


CONFIGS = [
    [['L', 'U'], ['L', 'U']],
    [['L', 'U', 'L', 'U'], ['L', 'U']],
    [['L', 'U'], ['L', 'U'], ['L', 'U']],
    [['L', 'U', 'L', 'U'], ['L', 'U'], ['L', 'U']],
    [['L', 'U', 'L', 'U'], ['L', 'U', 'L', 'U'], ['L', 'U']],
]
found = None
for c in CONFIGS:
    for spurious in (False, True):
        r = run(c, spurious)
        if r is not None and found is None:
            found = (c, spurious) + r
name = 'model-lock' + (' --mutant=' + MUTANT if MUTANT else '')
if found:
    print('%s: %s%s with %s%s: %s' % (name, found[2], ' (as it must)' if MUTANT else '', found[0],
                                     ' (spurious wake-ups)' if found[1] else '', found[3]))
else:
    print('%s: %d configurations, no lost wake-up' % (name, len(CONFIGS)))
sys.exit((0 if found else 1) if MUTANT else (1 if found else 0))
