export {
  Membership,
  MEMBER_TIMEOUT_HEARTBEATS,
  FORMING_HEARTBEATS,
  type MembershipOptions,
  type MembershipState,
  type MembershipView,
  type MemberView,
} from './membership.js';
export { ForeignNodes, type ForeignNode } from './foreign-nodes.js';
export { rendezvousOwner, rendezvousWeight } from './rendezvous.js';
export {
  coordinationSubjects,
  CoordinationMessageError,
  type CoordinationSubjects,
  type GrantedNode,
} from './messages.js';
