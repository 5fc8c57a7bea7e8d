rules '[bold]:warning:[31m]8;;http://x‮'
