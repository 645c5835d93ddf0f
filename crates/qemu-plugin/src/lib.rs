//! tiersim's QEMU plugin: records every load and store of a program run under
//! QEMU's user-mode emulator (`qemu-x86_64 -plugin …`) into the shared-memory
//! rings of `tiersim-ring`, one ring per guest thread, for `tiersim record` to
//! drain into its native trace format.
//!
//! `tiersim record` starts QEMU with
//! `-plugin /proc/self/fd/P,ring_fd=R,plugin_fd=P`: the plugin maps the ring region
//! from descriptor `R` (a memfd tiersim created), then closes `R` and `P` (the memfd
//! holding this library), so the program sees the same descriptors as when it runs
//! natively.
//!
//! What is recorded, per guest thread (a vCPU in user mode):
//! - at translation, each translation block gets an execution callback that counts
//!   its instructions, and each instruction a memory callback whose user
//!   data is the instruction's index in the block and the low 32 bits of its address;
//! - at execution, the block callback notes the thread's instruction count at the
//!   block's start, so an access knows the exact count of its instruction: the
//!   instructions since the previous access's instruction go with the first access
//!   of an instruction's execution, which is flagged as such ([`Entry::new_insn`]).
//!
//! QEMU 7.2 splits a 16- or 32-byte vector access into 8-byte ones and runs a
//! `rep` string instruction one iteration per execution; tiersim's reader joins
//! both back (the first by the execution flag, the second by the address), so the
//! plugin stays a few stores per access.

mod api;

use api::*;
use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use tiersim_ring::{Entry, Producer, Region, RING_EXITED, RING_LIVE, STATUS_DONE, STATUS_RUNNING, STATUS_TOO_MANY_THREADS};

/// The API version this plugin was built against; QEMU checks it before installing.
#[no_mangle]
pub static qemu_plugin_version: c_int = API_VERSION;

/// One guest thread's recording state.
struct Vcpu {
    producer: Producer<'static>,
    /// Instructions the thread has started executing (whole blocks).
    icount: u64,
    /// The count at the start of the block being executed.
    tb_base: u64,
    /// The count of the previous access's instruction (`u64::MAX` before the first).
    last: u64,
}

/// The state of one vCPU index, touched only by the thread that owns it (and by
/// QEMU's vCPU set-up before that thread runs).
struct Slot(UnsafeCell<Option<Vcpu>>);

// SAFETY: QEMU calls a vCPU's execution and memory callbacks on that vCPU's own
// thread, and its init and exit callbacks before the thread runs guest code or
// after it stopped, so a slot is never used by two threads at once.
unsafe impl Sync for Slot {}

static REGION: OnceLock<Region> = OnceLock::new();
static SLOTS: OnceLock<Box<[Slot]>> = OnceLock::new();

/// Set in a child process the program made with `fork`: the child is another
/// program run (as for `exec`), and its QEMU must not write into the parent's rings
/// (each has one producer) nor mark them ended.
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn in_forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// The recording state of vCPU `index`, if it has one.
#[inline]
fn vcpu(index: c_uint) -> Option<&'static mut Vcpu> {
    if FORKED.load(Ordering::Relaxed) {
        return None;
    }
    let slot = SLOTS.get()?.get(index as usize)?;
    // SAFETY: only the thread of vCPU `index` calls this for its slot (see `Slot`).
    unsafe { (*slot.0.get()).as_mut() }
}

extern "C" fn on_vcpu_init(_id: PluginId, index: c_uint) {
    let (Some(region), Some(slots), false) = (REGION.get(), SLOTS.get(), FORKED.load(Ordering::Relaxed)) else { return };
    let Some(slot) = slots.get(index as usize) else {
        region.header().status.store(STATUS_TOO_MANY_THREADS, Ordering::Release);
        return;
    };
    let producer = region.producer(index as usize);
    producer.set_state(RING_LIVE);
    // SAFETY: the vCPU's thread does not run yet (see `Slot`).
    unsafe { *slot.0.get() = Some(Vcpu { producer, icount: 0, tb_base: 0, last: u64::MAX }) };
}

extern "C" fn on_vcpu_exit(_id: PluginId, index: c_uint) {
    if let Some(v) = vcpu(index) {
        v.producer.set_state(RING_EXITED);
    }
}

extern "C" fn on_exit(_id: PluginId, _userdata: *mut c_void) {
    if let (Some(region), false) = (REGION.get(), FORKED.load(Ordering::Relaxed)) {
        let _ = region.header().status.compare_exchange(STATUS_RUNNING, STATUS_DONE, Ordering::AcqRel, Ordering::Acquire);
    }
}

extern "C" fn on_tb_exec(index: c_uint, userdata: *mut c_void) {
    if let Some(v) = vcpu(index) {
        v.tb_base = v.icount;
        v.icount += userdata as u64;
    }
}

/// Records one access; `userdata` holds the instruction's address (high half) and
/// its index in its block (low half).
extern "C" fn on_access(index: c_uint, info: MemInfo, vaddr: u64, userdata: *mut c_void) {
    let Some(v) = vcpu(index) else { return };
    let data = userdata as u64;
    let at = v.tb_base + (data & 0xffff_ffff);
    let new_insn = at != v.last;
    let instrs = if new_insn { at.wrapping_sub(v.last).wrapping_sub(1).min(u32::MAX as u64) as u32 } else { 0 };
    v.last = at;
    // SAFETY: `info` is the handle QEMU passed to this callback.
    let (size_shift, write) = unsafe { (qemu_plugin_mem_size_shift(info) as u8, qemu_plugin_mem_is_store(info)) };
    v.producer.push(Entry { vaddr, size_shift, write, new_insn, pc: (data >> 32) as u32, instrs }.encode());
}

extern "C" fn on_tb_trans(_id: PluginId, tb: *mut Tb) {
    // SAFETY: `tb` is the block QEMU is translating, valid during this callback;
    // the instruction handles come from it and are used within the callback.
    unsafe {
        let n = qemu_plugin_tb_n_insns(tb);
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, CB_NO_REGS, n as *mut c_void);
        for i in 0..n {
            let insn = qemu_plugin_tb_get_insn(tb, i);
            let pc = qemu_plugin_insn_vaddr(insn) as u32 as u64;
            let data = (pc << 32 | i as u64) as *mut c_void;
            // One callback for loads and stores, which asks which it is: QEMU 7.2
            // also calls a callback registered for loads only (or stores only) for
            // accesses of the other kind (a load-only one recorded 30 % more
            // accesses than lackey on /bin/true, most of them as stores).
            qemu_plugin_register_vcpu_mem_cb(insn, on_access, CB_NO_REGS, MEM_RW, data);
        }
    }
}

/// The value of `name=value` among the plugin's arguments, as a descriptor number.
fn fd_arg(args: &[&str], name: &str) -> Result<c_int, String> {
    let value = args
        .iter()
        .find_map(|a| a.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
        .ok_or_else(|| format!("missing argument {name}=N"))?;
    value.parse().map_err(|_| format!("{name}={value}: not a file descriptor number"))
}

/// Maps the ring region from `args` and closes the descriptors tiersim passed.
fn attach(args: &[&str]) -> Result<Region, String> {
    let fd = fd_arg(args, "ring_fd")?;
    // SAFETY: fstat writes one `stat` through a valid pointer; mmap maps the
    // descriptor's whole length shared, or fails; the descriptors are ours to close
    // (tiersim opened them for this plugin only) and the mapping outlives them.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return Err(format!("ring_fd={fd}: {}", std::io::Error::last_os_error()));
        }
        let len = st.st_size as usize;
        let base = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0);
        if base == libc::MAP_FAILED {
            return Err(format!("ring_fd={fd}: cannot map {len} bytes: {}", std::io::Error::last_os_error()));
        }
        libc::close(fd);
        if let Ok(own) = fd_arg(args, "plugin_fd") {
            libc::close(own);
        }
        Region::attach(base as *mut u8, len)
    }
}

/// Installs the plugin: called once by QEMU when it loads the library.
///
/// # Safety
/// QEMU passes a valid `info` and `argc` valid C strings in `argv`.
#[no_mangle]
pub unsafe extern "C" fn qemu_plugin_install(id: PluginId, info: *const Info, argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: QEMU's contract for this function (see above).
    let (info, args) = unsafe {
        let args: Vec<&str> = (0..argc.max(0) as usize).filter_map(|i| CStr::from_ptr(*argv.add(i)).to_str().ok()).collect();
        (&*info, args)
    };
    if info.version_min > API_VERSION || info.version_cur < API_VERSION {
        eprintln!("tiersim plugin: QEMU supports plugin API {}–{}, this plugin needs {API_VERSION}", info.version_min, info.version_cur);
        return 1;
    }
    if info.system_emulation {
        eprintln!("tiersim plugin: runs under QEMU's user-mode emulator (qemu-x86_64 …), not system emulation");
        return 1;
    }
    let region = match attach(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tiersim plugin: {e}");
            return 1;
        }
    };
    let slots = (0..region.rings()).map(|_| Slot(UnsafeCell::new(None))).collect();
    region.header().attached.store(1, Ordering::Release);
    if REGION.set(region).is_err() || SLOTS.set(slots).is_err() {
        eprintln!("tiersim plugin: installed twice");
        return 1;
    }
    // SAFETY: registering callbacks with the id QEMU gave this plugin, and a fork
    // handler (a plain function) with the C library.
    unsafe {
        libc::pthread_atfork(None, None, Some(in_forked_child));
        qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
        qemu_plugin_register_vcpu_exit_cb(id, on_vcpu_exit);
        qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
        qemu_plugin_register_atexit_cb(id, on_exit, std::ptr::null_mut());
    }
    0
}
