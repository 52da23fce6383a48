//! What a GPU event is, from its name alone, as Holistic Trace Analysis
//! 0.5 classifies it (`hta.utils.utils.get_kernel_type`).

use serde::{Deserialize, Serialize};

/// The kind of a GPU event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelKind {
    /// Anything else: the work the GPU computes.
    Compute,
    /// A collective's kernel: the name starts with `nccl` and holds
    /// `Kernel` after it (`^nccl.*Kernel`).
    Communication,
    /// A copy or fill: the name starts with `Memcpy`, `Memset` or `dma`.
    Memory,
    /// Neither computation nor one of the above: a name holding `Memcpy`
    /// or `Sync` elsewhere (`Event Sync`, …).
    Other,
}

impl KernelKind {
    /// The kind of the GPU event named `name`.
    pub fn of(name: &str) -> KernelKind {
        if is_communication(name) {
            KernelKind::Communication
        } else if ["Memcpy", "Memset", "dma"]
            .iter()
            .any(|p| name.starts_with(p))
        {
            KernelKind::Memory
        } else if name.contains("Memcpy") || name.starts_with("Memset") || name.contains("Sync") {
            KernelKind::Other
        } else {
            KernelKind::Compute
        }
    }

    /// Every kind, in the report's order.
    pub const ALL: [KernelKind; 4] = [
        KernelKind::Compute,
        KernelKind::Communication,
        KernelKind::Memory,
        KernelKind::Other,
    ];

    /// Its position in [`KernelKind::ALL`] (the declaration order).
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The kind's name as the JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            KernelKind::Compute => "compute",
            KernelKind::Communication => "communication",
            KernelKind::Memory => "memory",
            KernelKind::Other => "other",
        }
    }
}

/// `^nccl.*Kernel` (a regular expression's `.` does not match a newline).
fn is_communication(name: &str) -> bool {
    name.strip_prefix("nccl")
        .and_then(|rest| rest.find("Kernel").map(|at| &rest[..at]))
        .is_some_and(|between| !between.contains('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use KernelKind::*;

    #[test]
    fn every_kind_is_at_its_index_in_all() {
        for (i, kind) in KernelKind::ALL.iter().enumerate() {
            assert_eq!(kind.index(), i, "{kind:?}");
        }
    }

    #[test]
    fn names_are_classified_as_hta_classifies_them() {
        assert_eq!(
            KernelKind::of("ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
            Communication
        );
        assert_eq!(
            KernelKind::of("ncclKernel_AllGather_RING_LL"),
            Communication
        );
        // `nccl` without `Kernel` after it is computation to HTA.
        assert_eq!(KernelKind::of("nccl:all_reduce"), Compute);
        assert_eq!(KernelKind::of("ncclx\nKernel"), Compute);
        assert_eq!(KernelKind::of("Memcpy DtoD (Device -> Device)"), Memory);
        assert_eq!(KernelKind::of("MemcpyH2D"), Memory);
        assert_eq!(KernelKind::of("Memset (Device)"), Memory);
        assert_eq!(KernelKind::of("dma_copy"), Memory);
        assert_eq!(KernelKind::of("Event Sync"), Other);
        assert_eq!(KernelKind::of("cudaMemcpyAsync"), Other);
        assert_eq!(KernelKind::of("fusedMemset"), Compute);
        assert_eq!(
            KernelKind::of("void at::native::vectorized_elementwise_kernel<4>"),
            Compute
        );
        assert_eq!(KernelKind::of("sm80_xmma_gemm_f32f32"), Compute);
    }
}
