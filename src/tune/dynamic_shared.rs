//! Shared memory sized at launch (`extern __shared__`, Triton's `global_smem`): ptxas never
//! sees its size, so occupancy priced without it can be more warps per SM than the launch
//! allows. A size the caller gives (`NVCC_ORION_DYNAMIC_SHARED`) is priced with every
//! launch; without one, a kernel that uses such memory keeps ptxas's budget, since every
//! lower budget is bought with warps that the unknown size could take away.

use std::collections::{BTreeMap, BTreeSet};

use super::candidates::{DynamicShared, KernelPlan};
use crate::settings::block_size_for;

/// Kernel `name`'s shared memory sized at launch: none unless it is among `users` (the
/// entries whose PTX names an `.extern .shared` array), else the size `given` for it (read
/// like the block sizes: a per-kernel entry over a global one), else unknown.
pub(crate) fn of_kernel(
    users: &BTreeSet<String>,
    given: &[(Option<String>, u32)],
    name: &str,
) -> Option<DynamicShared> {
    users
        .contains(name)
        .then(|| block_size_for(given, name).map_or(DynamicShared::Unknown, DynamicShared::Given))
}

/// Clear the budgets of every kernel whose dynamic shared size is unknown; per kernel, why.
pub(crate) fn hold_unknown(kernels: &mut [KernelPlan]) -> BTreeMap<String, String> {
    let mut held = BTreeMap::new();
    for p in kernels
        .iter_mut()
        .filter(|p| p.dynamic_shared == Some(DynamicShared::Unknown))
    {
        p.budgets.clear();
        held.insert(
            p.name.clone(),
            "uses shared memory sized at launch, of a size not given \
             (NVCC_ORION_DYNAMIC_SHARED): the warps a lower budget buys could be taken by it, \
             so ptxas's budget stays"
                .to_string(),
        );
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_per_kernel_then_global_else_unknown() {
        let users = BTreeSet::from(["a".to_string(), "b".to_string()]);
        let given = vec![(None, 1024), (Some("b".to_string()), 0)];
        assert_eq!(
            of_kernel(&users, &given, "a"),
            Some(DynamicShared::Given(1024))
        );
        assert_eq!(
            of_kernel(&users, &given, "b"),
            Some(DynamicShared::Given(0))
        );
        assert_eq!(of_kernel(&users, &given, "c"), None);
        assert_eq!(of_kernel(&users, &[], "a"), Some(DynamicShared::Unknown));
    }
}
