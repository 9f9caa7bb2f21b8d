//! `EIATTR_*` attribute codes of `.nv.info` records: names (CUDA 13.5 `cuobjdump`, 0x00-0x6d),
//! and which attributes hold instruction offsets, in which layout.

macro_rules! attrs {
    ($($code:literal => $var:ident, $name:literal;)*) => {
        /// An attribute code. Codes without a name in cuobjdump 13.5 are [`Attr::Unknown`] and
        /// are kept and written back verbatim like every other record.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Attr {
            $($var,)*
            Unknown(u8),
        }
        impl Attr {
            pub(crate) fn from_code(code: u8) -> Attr {
                match code {
                    $($code => Attr::$var,)*
                    other => Attr::Unknown(other),
                }
            }
            pub fn code(self) -> u8 {
                match self {
                    $(Attr::$var => $code,)*
                    Attr::Unknown(c) => c,
                }
            }
            /// The name without the `EIATTR_` prefix (`UNKNOWN` for unnamed codes).
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Attr::$var => $name,)*
                    Attr::Unknown(_) => "UNKNOWN",
                }
            }
        }
    };
}

attrs! {
    0x00 => Error, "ERROR";
    0x01 => Pad, "PAD";
    0x02 => ImageSlot, "IMAGE_SLOT";
    0x03 => JumptableRelocs, "JUMPTABLE_RELOCS";
    0x04 => CtaidzUsed, "CTAIDZ_USED";
    0x05 => MaxThreads, "MAX_THREADS";
    0x06 => ImageOffset, "IMAGE_OFFSET";
    0x07 => ImageSize, "IMAGE_SIZE";
    0x08 => TextureNormalized, "TEXTURE_NORMALIZED";
    0x09 => SamplerInit, "SAMPLER_INIT";
    0x0a => ParamCbank, "PARAM_CBANK";
    0x0b => SmemParamOffsets, "SMEM_PARAM_OFFSETS";
    0x0c => CbankParamOffsets, "CBANK_PARAM_OFFSETS";
    0x0d => SyncStack, "SYNC_STACK";
    0x0e => TexidSampidMap, "TEXID_SAMPID_MAP";
    0x0f => Externs, "EXTERNS";
    0x10 => Reqntid, "REQNTID";
    0x11 => FrameSize, "FRAME_SIZE";
    0x12 => MinStackSize, "MIN_STACK_SIZE";
    0x13 => SamplerForceUnnormalized, "SAMPLER_FORCE_UNNORMALIZED";
    0x14 => BindlessImageOffsets, "BINDLESS_IMAGE_OFFSETS";
    0x15 => BindlessTextureBank, "BINDLESS_TEXTURE_BANK";
    0x16 => BindlessSurfaceBank, "BINDLESS_SURFACE_BANK";
    0x17 => KparamInfo, "KPARAM_INFO";
    0x18 => SmemParamSize, "SMEM_PARAM_SIZE";
    0x19 => CbankParamSize, "CBANK_PARAM_SIZE";
    0x1a => QueryNumattrib, "QUERY_NUMATTRIB";
    0x1b => MaxregCount, "MAXREG_COUNT";
    0x1c => ExitInstrOffsets, "EXIT_INSTR_OFFSETS";
    0x1d => S2rctaidInstrOffsets, "S2RCTAID_INSTR_OFFSETS";
    0x1e => CrsStackSize, "CRS_STACK_SIZE";
    0x1f => NeedCnpWrapper, "NEED_CNP_WRAPPER";
    0x20 => NeedCnpPatch, "NEED_CNP_PATCH";
    0x21 => ExplicitCaching, "EXPLICIT_CACHING";
    0x22 => IstypepUsed, "ISTYPEP_USED";
    0x23 => MaxStackSize, "MAX_STACK_SIZE";
    0x24 => SuqUsed, "SUQ_USED";
    0x25 => LdCachemodInstrOffsets, "LD_CACHEMOD_INSTR_OFFSETS";
    0x26 => LoadCacheRequest, "LOAD_CACHE_REQUEST";
    0x27 => AtomSysInstrOffsets, "ATOM_SYS_INSTR_OFFSETS";
    0x28 => CoopGroupInstrOffsets, "COOP_GROUP_INSTR_OFFSETS";
    0x29 => CoopGroupMaskRegids, "COOP_GROUP_MASK_REGIDS";
    0x2a => Sw1850030War, "SW1850030_WAR";
    0x2b => WmmaUsed, "WMMA_USED";
    0x2c => HasPreV10Object, "HAS_PRE_V10_OBJECT";
    0x2d => Atomf16EmulInstrOffsets, "ATOMF16_EMUL_INSTR_OFFSETS";
    0x2e => Atom16EmulInstrRegMap, "ATOM16_EMUL_INSTR_REG_MAP";
    0x2f => Regcount, "REGCOUNT";
    0x30 => Sw2393858War, "SW2393858_WAR";
    0x31 => IntWarpWideInstrOffsets, "INT_WARP_WIDE_INSTR_OFFSETS";
    0x32 => SharedScratch, "SHARED_SCRATCH";
    0x33 => Statistics, "STATISTICS";
    0x34 => IndirectBranchTargets, "INDIRECT_BRANCH_TARGETS";
    0x35 => Sw2861232War, "SW2861232_WAR";
    0x36 => SwWar, "SW_WAR";
    0x37 => CudaApiVersion, "CUDA_API_VERSION";
    0x38 => NumMbarriers, "NUM_MBARRIERS";
    0x39 => MbarrierInstrOffsets, "MBARRIER_INSTR_OFFSETS";
    0x3a => CoroutineResumeIdOffsets, "COROUTINE_RESUME_ID_OFFSETS";
    0x3b => SamRegionStackSize, "SAM_REGION_STACK_SIZE";
    0x3c => PerRegTargetPerfStats, "PER_REG_TARGET_PERF_STATS";
    0x3d => CtaPerCluster, "CTA_PER_CLUSTER";
    0x3e => ExplicitCluster, "EXPLICIT_CLUSTER";
    0x3f => MaxClusterRank, "MAX_CLUSTER_RANK";
    0x40 => InstrRegMap, "INSTR_REG_MAP";
    0x41 => ReservedSmemUsed, "RESERVED_SMEM_USED";
    0x42 => ReservedSmem0Size, "RESERVED_SMEM_0_SIZE";
    0x43 => UcodeSectionData, "UCODE_SECTION_DATA";
    0x44 => UnusedLoadByteOffset, "UNUSED_LOAD_BYTE_OFFSET";
    0x45 => KparamInfoV2, "KPARAM_INFO_V2";
    0x46 => SyscallOffsets, "SYSCALL_OFFSETS";
    0x48 => GraphicsGlobalCbank, "GRAPHICS_GLOBAL_CBANK";
    0x49 => ShaderType, "SHADER_TYPE";
    0x4a => VrcCtaInitCount, "VRC_CTA_INIT_COUNT";
    0x4b => ToolsPatchFunc, "TOOLS_PATCH_FUNC";
    0x4c => NumBarriers, "NUM_BARRIERS";
    0x4d => TexmodeIndependent, "TEXMODE_INDEPENDENT";
    0x4e => PerfStatistics, "PERF_STATISTICS";
    0x4f => AtEntryFragments, "AT_ENTRY_FRAGMENTS";
    0x50 => SparseMmaMask, "SPARSE_MMA_MASK";
    0x51 => Tcgen051ctaUsed, "TCGEN05_1CTA_USED";
    0x52 => Tcgen052ctaUsed, "TCGEN05_2CTA_USED";
    0x53 => GenErrbarAtExit, "GEN_ERRBAR_AT_EXIT";
    0x54 => RegReconfig, "REG_RECONFIG";
    0x55 => Annotations, "ANNOTATIONS";
    0x57 => StackCanaryTrapOffsets, "STACK_CANARY_TRAP_OFFSETS";
    0x58 => StubFunctionKind, "STUB_FUNCTION_KIND";
    0x59 => LocalCtaAsyncStoreOffsets, "LOCAL_CTA_ASYNC_STORE_OFFSETS";
    0x5b => BlocksAreClusters, "BLOCKS_ARE_CLUSTERS";
    0x5c => Sanitize, "SANITIZE";
    0x5d => SyscallsFallback, "SYSCALLS_FALLBACK";
    0x5e => CudaReq, "CUDA_REQ";
    0x61 => RtcoreEntry, "RTCORE_ENTRY";
    0x62 => ClusterLaunchControlUsed, "CLUSTER_LAUNCH_CONTROL_USED";
    0x64 => MinPerCtaMemorySize, "MIN_PER_CTA_MEMORY_SIZE";
    0x65 => IgnoreoobCpAsyncBulkInstrOffsets, "IGNOREOOB_CP_ASYNC_BULK_INSTR_OFFSETS";
    0x66 => Language, "LANGUAGE";
    0x68 => GridAttributes, "GRID_ATTRIBUTES";
    0x69 => StackOffset, "STACK_OFFSET";
    0x6a => RtLivestateSassMap, "RT_LIVESTATE_SASS_MAP";
    0x6b => NvsalSwWar, "NVSAL_SW_WAR";
    0x6c => InstrOffsets, "INSTR_OFFSETS";
    0x6d => PreexitUsed, "PREEXIT_USED";
}

/// How an attribute's value holds instruction byte offsets (within its function's `.text`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OffsetLayout {
    /// No instruction offsets.
    None,
    /// A list of `u32` offsets.
    List,
    /// `INDIRECT_BRANCH_TARGETS`: `{u32 brx, u32 0, u32 n, u32 target[n]}` repeated.
    BranchTargets,
    /// 16-byte records, the offset first (`MBARRIER_INSTR_OFFSETS`).
    Stride16,
    /// `{u32 kind, u32 offset}` pairs (`ANNOTATIONS`).
    KindOffsetPairs,
    /// Holds offsets in a layout this layer does not know: code cannot be moved.
    Unknown,
}

impl Attr {
    /// Where this attribute keeps instruction offsets (§4.3 of the format notes).
    pub(crate) fn offset_layout(self) -> OffsetLayout {
        match self.code() {
            0x1c | 0x1d | 0x25 | 0x27 | 0x28 | 0x2d | 0x31 | 0x3a | 0x44 | 0x46 | 0x57 | 0x59
            | 0x65 | 0x6c => OffsetLayout::List,
            0x34 => OffsetLayout::BranchTargets,
            0x39 => OffsetLayout::Stride16,
            0x55 => OffsetLayout::KindOffsetPairs,
            0x2e | 0x40 | 0x4b | 0x4f | 0x6a => OffsetLayout::Unknown,
            _ => OffsetLayout::None,
        }
    }
}
