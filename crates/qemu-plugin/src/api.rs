//! The part of QEMU's TCG plugin API (`include/qemu/qemu-plugin.h`, API version 1,
//! as in QEMU 7.2) this plugin uses, declared by hand. The functions are exported
//! by the QEMU executable that loads the plugin and resolved when it is loaded.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `qemu_plugin_id_t`: the plugin's opaque identifier.
pub type PluginId = u64;

/// `qemu_plugin_meminfo_t`: an opaque description of one memory access.
pub type MemInfo = u32;

/// The API version this plugin is written against (`QEMU_PLUGIN_VERSION`).
pub const API_VERSION: c_int = 1;

/// `enum qemu_plugin_cb_flags`: the callback reads no guest registers.
pub const CB_NO_REGS: c_int = 0;
/// `enum qemu_plugin_mem_rw`: loads and stores.
pub const MEM_RW: c_int = 3;

/// `qemu_info_t`: what QEMU tells a plugin at installation.
#[repr(C)]
pub struct Info {
    pub target_name: *const c_char,
    /// Oldest and newest API versions QEMU supports.
    pub version_min: c_int,
    pub version_cur: c_int,
    pub system_emulation: bool,
    /// `system.smp_vcpus` and `system.max_vcpus` (system emulation only).
    pub smp_vcpus: c_int,
    pub max_vcpus: c_int,
}

/// `struct qemu_plugin_tb`: a translation block being translated (opaque).
#[repr(C)]
pub struct Tb {
    _opaque: [u8; 0],
}

/// `struct qemu_plugin_insn`: one instruction of a translation block (opaque).
#[repr(C)]
pub struct Insn {
    _opaque: [u8; 0],
}

pub type VcpuSimpleCb = extern "C" fn(id: PluginId, vcpu_index: c_uint);
pub type UdataCb = extern "C" fn(id: PluginId, userdata: *mut c_void);
pub type TbTransCb = extern "C" fn(id: PluginId, tb: *mut Tb);
pub type VcpuUdataCb = extern "C" fn(vcpu_index: c_uint, userdata: *mut c_void);
pub type VcpuMemCb = extern "C" fn(vcpu_index: c_uint, info: MemInfo, vaddr: u64, userdata: *mut c_void);

extern "C" {
    pub fn qemu_plugin_register_vcpu_init_cb(id: PluginId, cb: VcpuSimpleCb);
    pub fn qemu_plugin_register_vcpu_exit_cb(id: PluginId, cb: VcpuSimpleCb);
    pub fn qemu_plugin_register_vcpu_tb_trans_cb(id: PluginId, cb: TbTransCb);
    pub fn qemu_plugin_register_atexit_cb(id: PluginId, cb: UdataCb, userdata: *mut c_void);
    pub fn qemu_plugin_register_vcpu_tb_exec_cb(tb: *mut Tb, cb: VcpuUdataCb, flags: c_int, userdata: *mut c_void);
    pub fn qemu_plugin_register_vcpu_mem_cb(insn: *mut Insn, cb: VcpuMemCb, flags: c_int, rw: c_int, userdata: *mut c_void);
    pub fn qemu_plugin_tb_n_insns(tb: *const Tb) -> usize;
    pub fn qemu_plugin_tb_get_insn(tb: *const Tb, idx: usize) -> *mut Insn;
    pub fn qemu_plugin_insn_vaddr(insn: *const Insn) -> u64;
    pub fn qemu_plugin_mem_size_shift(info: MemInfo) -> c_uint;
    pub fn qemu_plugin_mem_is_store(info: MemInfo) -> bool;
}
