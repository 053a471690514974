from sb3_gpg.common.wrappers.action_mask_from_info import ActionMaskFromInfo

__all__ = ["ActionMaskFromInfo"]
