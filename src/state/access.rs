//! The fleet's notices applied to this replica's access caches: another replica changed
//! keys or grants, so what this one cached about them is dropped.

use crate::fleet::AccessCaches;
use crate::pipeline::identity::IdentityResolver;
use crate::pipeline::profiles::ProfileCache;

pub(super) struct FleetAccess {
    pub identities: IdentityResolver,
    pub profiles: ProfileCache,
}

impl AccessCaches for FleetAccess {
    fn keys_changed(&self) {
        self.identities.invalidate_all();
    }

    fn grants_changed(&self) {
        self.profiles.invalidate_all();
    }
}
